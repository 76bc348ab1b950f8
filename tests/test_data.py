"""Chapter 7's data: the grammar, Chinese numerals, splits, vocabulary, download."""

import hashlib
import http.server
import io
import threading
import zipfile
from pathlib import Path

import pytest

from transformer_course.corpus import EOS_ID, SPECIALS, train_tokenizer
from transformer_course.downloads import (
    DownloadError,
    download,
    read_iwslt_archive,
)
from transformer_course.toy_tasks import (
    Vocabulary,
    chinese_numeral,
    english_number_words,
    grammar_pairs,
    is_compositional,
    number_pair,
    pair_from_pieces,
)
from transformer_course.training import make_task

NUMERALS = {
    0: "零",
    1: "一",
    10: "十",
    15: "十五",
    20: "二十",
    100: "一百",
    101: "一百零一",
    110: "一百一十",
    111: "一百一十一",
    1000: "一千",
    1001: "一千零一",
    1010: "一千零一十",
    1100: "一千一百",
    10000: "一万",
    10001: "一万零一",
    10010: "一万零一十",
    10100: "一万零一百",
    12305: "一万二千三百零五",
    100000: "十万",
    100010: "十万零一十",
    110000: "十一万",
    1000000: "一百万",
    1010000: "一百零一万",
    20000000: "二千万",
    99999999: "九千九百九十九万九千九百九十九",
    100000000: "一亿",
    100000001: "一亿零一",
    100010000: "一亿零一万",
    100001000: "一亿零一千",
    1000000000: "十亿",
    200300040005: "二千零三亿零四万零五",
}


@pytest.mark.parametrize(("n", "expected"), NUMERALS.items())
def test_chinese_numeral(n, expected):
    assert chinese_numeral(n) == expected


@pytest.mark.parametrize("bad", [-1, 10**12, 1.5, "12"])
def test_chinese_numeral_refuses_what_it_cannot_write(bad):
    with pytest.raises(ValueError, match="chinese_numeral needs"):
        chinese_numeral(bad)


def test_chinese_numeral_never_doubles_zero_nor_ends_with_it():
    for n in range(1, 200_000, 7):
        text = chinese_numeral(n)
        assert "零零" not in text and not text.endswith("零"), (n, text)
        assert not text.startswith("一十"), (n, text)


def test_english_number_words():
    assert (
        english_number_words(12305)
        == "twelve thousand three hundred and five".split()
    )
    assert english_number_words(21) == ["twenty", "one"]
    assert number_pair(101).target == tuple("一百零一")


def test_grammar_is_large_distinct_and_holds_the_examples():
    pairs = grammar_pairs()
    by_source = {" ".join(p.source): "".join(p.target) for p in pairs}
    assert len(by_source) == len(pairs) > 20_000
    assert by_source["I love you"] == "我爱你"
    assert (
        by_source["my friend waited for the teacher at the station yesterday"]
        == "我的朋友昨天在车站等老师"
    )
    assert by_source["she did not drink tea"] == "她没喝茶"
    assert by_source["he does not like me every day"] == "他每天不喜欢我"
    assert by_source["we saw the doctor"] == "我们看见了医生"


def test_alignment_points_at_real_words_and_covers_every_character():
    for pair in grammar_pairs()[::97]:
        assert len(pair.alignment) == len(pair.target)
        for words in pair.alignment:
            assert words and all(0 <= i < len(pair.source) for i in words)
    pair = pair_from_pieces(
        [(0, "my|friend", "我的|朋友"), (1, "waited for", "等")]
    )
    assert pair.source == ("my", "friend", "waited", "for")
    assert pair.alignment == ((0,), (0,), (1,), (1,), (2, 3))


@pytest.mark.parametrize("name", ["grammar", "numbers"])
def test_splits_are_disjoint_and_compositional_is_held_out(name):
    task = make_task(name, n_train=3000, n_test=300, n_validation=200)
    sources = {
        split: {p.source for p in pairs} for split, pairs in task.splits.items()
    }
    assert len(sources["train"]) == 3000
    for a, b in [
        ("train", "test"),
        ("train", "validation"),
        ("test", "validation"),
        ("train", "compositional"),
        ("test", "compositional"),
    ]:
        assert not sources[a] & sources[b], (a, b)
    assert not any(is_compositional(p, name) for p in task.splits["train"])
    assert all(is_compositional(p, name) for p in task.splits["compositional"])
    assert task.vocab.tokens[:4] == list(SPECIALS)
    source, target = task.examples("test")[0]
    assert source[-1] == EOS_ID and EOS_ID not in target
    # every test token is known: the vocabulary of training covers the task
    assert all(i != 3 for s, t in task.examples("test") for i in s + t)


def test_splits_are_seeded():
    a = make_task("numbers", n_train=500, seed=1, n_test=50, n_validation=50)
    b = make_task("numbers", n_train=500, seed=1, n_test=50, n_validation=50)
    c = make_task("numbers", n_train=500, seed=2, n_test=50, n_validation=50)
    assert a.splits["test"] == b.splits["test"] != c.splits["test"]


def test_vocabulary_round_trip_and_unknown():
    vocab = Vocabulary([*SPECIALS, "I", "love", "you", "我", "爱", "你"])
    ids = vocab.encode(["我", "爱", "你", "她"])
    assert ids == [7, 8, 9, 3]
    assert vocab.decode([1, 7, 8, 9, 2, 5, 0]) == ["我", "爱", "你"]
    with pytest.raises(ValueError):
        Vocabulary(["I", "<pad>"])


# ---------------------------------------------------------------- download


def _archive_bytes(n=30) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        head = "<url>http://www.ted.com/talks/x</url>\n<talkid>1</talkid>\n"
        archive.writestr(
            "en-zh/train.tags.en-zh.en",
            head + "".join(f"sentence number {i}\n" for i in range(n)),
        )
        archive.writestr(
            "en-zh/train.tags.en-zh.zh",
            head + "".join(f"第{i}句话\n" for i in range(n)),
        )
        archive.writestr("en-zh/README", "IWSLT 2017 stand-in")
    return buffer.getvalue()


@pytest.fixture
def server():
    """A local HTTP server: /good serves the archive, /cut sends half of it
    and closes the connection."""
    body = _archive_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server API)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path == "/cut":
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", body
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_download_checks_the_checksum_and_caches(server, tmp_path):
    url, body = server
    checksum = hashlib.sha256(body).hexdigest()
    path = download(f"{url}/good", tmp_path / "en-zh.zip", checksum)
    assert path.read_bytes() == body
    assert _leftovers(tmp_path) == ["en-zh.zip"]
    # cached: a second call does not fetch again (the URL would fail)
    assert download(f"{url}/missing", path, checksum) == path
    pairs = read_iwslt_archive(path)
    assert len(pairs) == 30
    assert pairs[0] == ("sentence number 0", "第0句话")
    tokenizer = train_tokenizer([t for p in pairs for t in p], 80)
    assert [tokenizer.token_to_id(t) for t in SPECIALS] == [0, 1, 2, 3]
    for text in ("sentence number 7", "第7句话"):  # spaces kept, text back
        assert tokenizer.decode(tokenizer.encode(text).ids) == text


def test_download_refuses_a_wrong_checksum_and_keeps_nothing(server, tmp_path):
    url, _ = server
    with pytest.raises(DownloadError, match="checksum mismatch"):
        download(f"{url}/good", tmp_path / "en-zh.zip", "0" * 64)
    assert _leftovers(tmp_path) == []


def test_download_cut_connection_raises_and_keeps_nothing(server, tmp_path):
    url, body = server
    with pytest.raises(DownloadError, match="failed after|stopped at"):
        download(
            f"{url}/cut",
            tmp_path / "en-zh.zip",
            hashlib.sha256(body).hexdigest(),
        )
    assert _leftovers(tmp_path) == []


def test_download_keeps_an_old_file_when_the_new_one_is_bad(server, tmp_path):
    url, _ = server
    path = tmp_path / "en-zh.zip"
    path.write_bytes(b"old")
    with pytest.raises(DownloadError):
        download(f"{url}/good", path, "1" * 64)
    assert path.read_bytes() == b"old"
    assert _leftovers(tmp_path) == ["en-zh.zip"]
