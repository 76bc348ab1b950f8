"""Chapter 7's corpus: catalogs fetched and checked, cleaned, split without leakage,
tokenized reversibly, scored; and the model that ships with the library."""

import functools
import hashlib
import http.server
import json
import math
import shutil
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

import transformer_course.catalogs as catalogs_module
from transformer_course.catalogs import (
    CATALOG_SOURCES,
    CatalogSource,
    CorpusError,
    Entry,
    catalog_dir,
    extract_catalogs,
    fetch_catalogs,
    is_kept,
    kept_record,
    outside_gb2312,
    read_catalogs,
)
from transformer_course.corpus import (
    BOS_ID,
    CORPUS_DIGEST,
    EOS_ID,
    TAGS,
    MessagePair,
    clean,
    corpus_digest,
    gettext_corpus,
    normalise,
    placeholders,
    random_split,
    split_by_package,
    strip_accelerators,
    strip_markup,
    tag_placeholders,
    train_tokenizer,
    untag_placeholders,
)
from transformer_course.translation import (
    BLEU_ZH,
    CHRF,
    Retrieval,
    ban_repeated_ngrams,
    ban_wrong_tags,
    char_ngrams,
    load_translation_model,
    loops,
    paired_difference,
    placeholder_accuracy,
    prepared_metrics,
    save_translation_model,
    scores,
    translate,
)

HAVE_CATALOGS = all(
    (catalog_dir() / s.package).is_dir() for s in CATALOG_SOURCES
)
needs_catalogs = pytest.mark.skipif(
    not HAVE_CATALOGS,
    reason="the catalogs are not fetched (the README's command 1 fetches them)",
)


@pytest.fixture(scope="module")
def book_corpus() -> dict:
    """gettext_corpus(), built once for the tests that read it (4-5 s a
    build); test_the_book_corpus_is_the_pinned_one_... checks what it holds.
    The tests only read it."""
    return gettext_corpus()


@pytest.fixture(scope="module")
def shipped_model():
    """load_translation_model(): (model, tokenizer, record), loaded once for
    the tests that translate with it; translate() changes nothing in it."""
    return load_translation_model()


# -- cleaning ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Delete %s?", ["%s"]),
        (
            "%(count)s files in %(folder_name)s",
            ["%(count)s", "%(folder_name)s"],
        ),
        ("{0} of {total}: {}", ["{0}", "{total}", "{}"]),
        ("%1$s and %2$d, 100%%", ["%1$s", "%2$d", "%%"]),
        ("%.2f MB, %-10s", ["%.2f", "%-10s"]),
        ("${HOME}/bin", ["${HOME}"]),
        ("no placeholder here: 100 % sure", []),
    ],
)
def test_placeholders(text, expected):
    assert placeholders(text) == expected


@pytest.mark.parametrize(
    "source, target, expected",
    [
        ("_File", "文件(_F)", ("File", "文件")),
        ("A_bbreviation:", "缩写(_B)：", ("Abbreviation:", "缩写：")),
        ("&Open", "打开(&O)", ("Open", "打开")),
        (
            "_Save as %(file_name)s",
            "另存为 %(file_name)s",
            ("Save as %(file_name)s", "另存为 %(file_name)s"),
        ),
        # an underscore that is no accelerator stays: inside a word, or a placeholder's
        ("label_publish", "批准", ("label_publish", "批准")),
        (
            "Sign in to %(site_title)s",
            "登录 %(site_title)s",
            ("Sign in to %(site_title)s", "登录 %(site_title)s"),
        ),
        ("R&D", "研发", ("R&D", "研发")),
    ],
)
def test_strip_accelerators(source, target, expected):
    assert strip_accelerators(source, target) == expected


def test_strip_markup_removes_tags_and_entities_keeps_placeholders():
    assert (
        strip_markup("<strong>%(name)s</strong> &amp; <em>co</em>")
        == "%(name)s & co"
    )
    assert strip_markup("  two\nlines  ") == "two lines"
    assert (
        strip_markup("{value:<10}") == "{value:<10}"
    )  # a format spec, not a tag


def entry(source, target, package="p", **kind):
    fields = dict(context=None, plural=False, fuzzy=False, obsolete=False)
    return Entry(package, source=source, target=target, **(fields | kind))


def test_clean_drops_each_kind_and_counts_it():
    entries = [
        entry("Open file", "打开文件"),
        entry("Old message", "旧消息", obsolete=True),
        entry("Guessed", "猜的", fuzzy=True),
        entry("Untranslated", ""),
        entry("Two\nlines", "两\n行"),
        entry("Delete %s?", "删除？"),  # the placeholder lost
        entry("Wagtail", "Wagtail"),  # left in English
        entry(" ".join(["word"] * 31), "很长"),
        entry("Save", "保存"),
        entry("Save", "存储"),
        entry("Save", "保存"),  # the most frequent translation wins
        entry("_Quit", "退出(_Q)"),
    ]
    pairs, counts = clean(entries)
    assert counts == {
        "read": 12,
        "not obsolete": 11,
        "not fuzzy": 10,
        "translated": 9,
        "one line": 8,
        "text left after markup": 8,
        "same placeholders": 7,
        "target has Chinese": 6,
        "<= 30 words, <= 100 characters": 5,
        "distinct in their package": 3,
    }
    assert pairs == [
        MessagePair("p", "Open file", "打开文件"),
        MessagePair("p", "Save", "保存"),
        MessagePair("p", "Quit", "退出"),
    ]


def test_entities_go_before_accelerators():
    # the & of &amp; is no accelerator: "Terms amp; Conditions" was the bug
    pairs, _ = clean([entry("Terms &amp; Conditions", "条款和条件")])
    assert pairs == [MessagePair("p", "Terms & Conditions", "条款和条件")]


def test_a_plural_entry_pairs_the_english_plural(tmp_path):
    folder = tmp_path / "p" / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "p.po").write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "One file"\nmsgid_plural "%(count)s files"\n'
        'msgstr[0] "%(count)s 个文件"\n',
        encoding="utf-8",
    )
    source = CatalogSource("p", "1", "0" * 64, "MIT")
    [e] = read_catalogs(tmp_path, [source])
    assert (e.source, e.target, e.plural) == (
        "%(count)s files",
        "%(count)s 个文件",
        True,
    )
    pairs, _ = clean([e])
    assert len(pairs) == 1  # same placeholders on both sides: kept


def test_bare_zh_catalogs_are_read_except_for_the_first_corpus_sources(
    tmp_path,
):
    def catalog(package, language, english, chinese):
        folder = tmp_path / package / language / "LC_MESSAGES"
        folder.mkdir(parents=True)
        (folder / "django.po").write_text(
            'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
            f'msgid "{english}"\nmsgstr "{chinese}"\n',
            encoding="utf-8",
        )

    for package in ("wagtail", "other"):
        catalog(package, "zh_Hans", "Save", "保存")
        catalog(package, "zh", "Delete", "删除")
    sources = [
        CatalogSource(p, "1", "0" * 64, "MIT") for p in ("wagtail", "other")
    ]
    read = {(e.package, e.source) for e in read_catalogs(tmp_path, sources)}
    # the shipped corpus read wagtail's (and django-cms's) zh_Hans only
    assert read == {
        ("wagtail", "Save"),
        ("other", "Save"),
        ("other", "Delete"),
    }


def test_traditional_characters_are_told_from_simplified():
    assert outside_gb2312(["这个文件已删除", "设置"]) == 0
    assert outside_gb2312(["這個檔案已刪除", "設定"]) > 0.3


def test_near_copies_of_held_out_messages_leave_training_and_are_counted():
    pairs = [
        MessagePair("a", "Save changes", "保存更改"),
        MessagePair("a", "Open", "打开"),
        MessagePair("t", "save changes.", "保存更改。"),
    ]
    removed = {}
    splits = split_by_package(pairs, dev=(), test=("t",), removed=removed)
    assert [p.source for p in splits["train"]] == ["Open"]
    assert removed == {"test": 0, "dev": 0, "train": 1}
    assert normalise("Save  Changes…") == normalise("save changes")


@pytest.mark.parametrize(
    "source, target, tagged_target",
    [
        (
            "Delete %(count)s files?",
            "删除%(count)s个文件？",
            "删除<ph0>个文件？",
        ),
        ("%s of %d", "%d 中的 %s", "<ph1> 中的 <ph0>"),  # moved: tags follow
        ("{0} and {0}", "{0}和{0}", "<ph0>和<ph0>"),  # one tag, twice
        ("No placeholder", "没有", "没有"),
    ],
)
def test_placeholders_become_numbered_tags_and_come_back(
    source, target, tagged_target
):
    found = placeholders(source)
    assert tag_placeholders(target, found) == tagged_target
    assert untag_placeholders(tag_placeholders(source), found) == source
    assert untag_placeholders(tagged_target, found) == target


def test_a_tag_the_source_lacks_is_dropped_and_too_many_are_refused():
    assert untag_placeholders("<ph0> 和 <ph3>", ["%s"]) == "%s 和 "
    many = " ".join(f"{{p{i}}}" for i in range(len(TAGS) + 1))
    with pytest.raises(ValueError, match="different placeholders"):
        tag_placeholders(many)


@needs_catalogs
def test_every_placeholder_of_every_held_out_message_survives_the_round_trip(
    book_corpus, shipped_model
):
    splits = book_corpus
    task_tokenizer = shipped_model[1]
    for pair in splits["test"] + splits["dev"]:
        found = placeholders(pair.source)
        for text in (pair.source, pair.target):
            tagged = tag_placeholders(text, found)
            ids = task_tokenizer.encode(tagged).ids
            back = untag_placeholders(task_tokenizer.decode(ids), found)
            assert sorted(placeholders(back)) == sorted(placeholders(text))


def test_loops_are_repeats_the_source_does_not_have():
    assert loops("No groups", "没有无组无无无无无无")
    assert not loops("----", "----")
    assert not loops("Save", "保存")


def test_paired_difference_is_zero_for_a_system_against_itself():
    hypotheses = ["保存文件", "打开", "关闭窗口"]
    references = ["保存文件", "打开文件", "关闭"]
    gap, low, high = paired_difference(hypotheses, hypotheses, references, CHRF)
    assert gap == low == high == 0
    better, low, high = paired_difference(
        ["x", "y", "z"], hypotheses, references, CHRF
    )
    assert better > 0 and low <= better <= high


# -- splits ----------------------------------------------------------------------


def test_split_by_package_holds_out_whole_packages_and_never_shares_a_source():
    pairs = [
        MessagePair("a", "Cancel", "取消"),
        MessagePair("a", "Open", "打开"),
        MessagePair("b", "Close", "关闭"),
        MessagePair(
            "t", "Cancel", "取消操作"
        ),  # also in training: stays in test
        MessagePair("t", "Publish", "发布"),
        MessagePair("d", "Close", "关闭"),
        MessagePair("d", "Publish", "发布"),  # in test: leaves dev
    ]
    splits = split_by_package(pairs, dev=("d",), test=("t",))
    assert {p.source for p in splits["test"]} == {"Cancel", "Publish"}
    assert {p.source for p in splits["dev"]} == {"Close"}
    assert {p.source for p in splits["train"]} == {"Open"}
    shuffled = random_split(pairs, 1, 1, seed=0)
    assert sum(map(len, shuffled.values())) == 4  # distinct English messages


def test_corpus_digest_changes_with_one_character():
    splits = {
        "train": [MessagePair("a", "Open", "打开")],
        "dev": [],
        "test": [],
    }
    other = {
        "train": [MessagePair("a", "Open", "打 开")],
        "dev": [],
        "test": [],
    }
    assert corpus_digest(splits) != corpus_digest(other)


@needs_catalogs
def test_the_book_corpus_is_the_pinned_one_and_test_shares_nothing_with_train(
    book_corpus,
):
    splits = book_corpus
    assert corpus_digest(splits) == CORPUS_DIGEST
    train = {p.source for p in splits["train"]}
    assert not train & {p.source for p in splits["test"]}
    assert not train & {p.source for p in splits["dev"]}
    assert {p.package for p in splits["test"]} == {"wagtail", "deluge"}


@needs_catalogs
def test_a_changed_catalog_is_an_error(tmp_path):
    folder = tmp_path / "catalogs"
    shutil.copytree(catalog_dir(), folder)
    # a catalog the corpus reads (wagtail's bare zh folder stays out of it)
    po = sorted((folder / "wagtail").rglob("zh_Hans/LC_MESSAGES/*.po"))[0]
    with po.open("a", encoding="utf-8") as file:  # one message more
        file.write('\nmsgid "A brand new message"\nmsgstr "全新的消息"\n')
    with pytest.raises(CorpusError, match="not the pinned"):
        gettext_corpus(folder)


def test_missing_catalogs_name_the_fix(tmp_path):
    with pytest.raises(CorpusError, match="fetch_catalogs"):
        gettext_corpus(tmp_path)


# -- fetching: a local package index on 127.0.0.1 -----------------------------------

PO = """msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\\n"

msgid "Open"
msgstr "打开"
"""


def make_wheel(
    folder: Path, name="fakepkg", version="1.0", catalog=True
) -> Path:
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{name}/__init__.py", "")
        if catalog:
            archive.writestr(f"{name}/locale/zh_CN/LC_MESSAGES/messages.po", PO)
        info = f"{name}-{version}.dist-info"
        archive.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        )
        archive.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def serve_index(root: Path, wheels: dict[str, Path]):
    """A PEP 503 index of {project: wheel} in root, served on 127.0.0.1; the
    server and its /simple URL."""
    for project, wheel in wheels.items():
        (root / "simple" / project).mkdir(parents=True)
        (root / "simple" / project / "index.html").write_text(
            f'<a href="../../{wheel.name}#sha256={sha256(wheel)}">{wheel.name}</a>'
        )
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=root
    )
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/simple"


@pytest.fixture
def package_index(tmp_path):
    """A PEP 503 index of one fake wheel, served on 127.0.0.1."""
    root = tmp_path / "index"
    root.mkdir()
    wheel = make_wheel(root)
    server, url = serve_index(root, {"fakepkg": wheel})
    yield url, sha256(wheel)
    server.shutdown()
    server.server_close()


@pytest.fixture
def two_package_index(tmp_path):
    """An index of two fake wheels, the second's project named Other.Pkg and
    its wheel file other_pkg-2.0-...: their sources, and the index's URL."""
    root = tmp_path / "index"
    root.mkdir()
    first, second = make_wheel(root), make_wheel(root, "other_pkg", "2.0")
    server, url = serve_index(root, {"fakepkg": first, "other-pkg": second})
    yield (
        (
            CatalogSource("fakepkg", "1.0", sha256(first), "MIT"),
            CatalogSource("Other.Pkg", "2.0", sha256(second), "MIT"),
        ),
        url,
    )
    server.shutdown()
    server.server_close()


def test_fetch_catalogs_downloads_checks_and_keeps_only_the_catalogs(
    package_index, tmp_path
):
    url, digest = package_index
    source = CatalogSource("fakepkg", "1.0", digest, "MIT")
    folder = fetch_catalogs(tmp_path / "kept", sources=(source,), index_url=url)
    kept = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.*"))
    assert kept == [
        "fakepkg/SOURCE.json",
        "fakepkg/fakepkg/locale/zh_CN/LC_MESSAGES/messages.po",
    ]
    # kept: a second call downloads nothing (the index may be gone)
    fetch_catalogs(
        folder, sources=(source,), index_url="http://127.0.0.1:9/simple"
    )


def test_fetch_catalogs_keeps_again_a_folder_kept_by_another_rule(
    package_index, tmp_path
):
    """A folder kept by an older CHINESE_FOLDER (its SOURCE.json names no
    rule, or another) may hold files the rule no longer keeps, or lack some:
    it is emptied and kept again, not trusted."""
    url, digest = package_index
    source = CatalogSource("fakepkg", "1.0", digest, "MIT")
    stale = tmp_path / "kept" / "fakepkg"
    (stale / "old" / "zh" / "LC_MESSAGES").mkdir(parents=True)
    (stale / "old" / "zh" / "LC_MESSAGES" / "extra.po").write_text(PO)
    (stale / "SOURCE.json").write_text(json.dumps(source._asdict()))
    assert not is_kept(tmp_path / "kept", source)
    folder = fetch_catalogs(tmp_path / "kept", sources=(source,), index_url=url)
    kept = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.*"))
    assert kept == [
        "fakepkg/SOURCE.json",
        "fakepkg/fakepkg/locale/zh_CN/LC_MESSAGES/messages.po",
    ]
    assert is_kept(folder, source)
    assert json.loads((stale / "SOURCE.json").read_text()) == kept_record(
        source
    )


def test_fetch_catalogs_downloads_what_is_missing_with_one_pip(
    two_package_index, tmp_path, monkeypatch
):
    """One pip download for every wheel not kept yet (a start of pip costs
    about a second), each wheel found by its project's name however its file
    spells it, and nothing downloaded for a package kept already."""
    sources, url = two_package_index
    calls = []
    pip_download = catalogs_module._pip_download

    def counted(specs, folder, index_url=None):
        calls.append(list(specs))
        return pip_download(specs, folder, index_url)

    monkeypatch.setattr(catalogs_module, "_pip_download", counted)
    folder = fetch_catalogs(tmp_path / "kept", sources=sources, index_url=url)
    assert calls == [["fakepkg==1.0", "Other.Pkg==2.0"]]
    assert all(is_kept(folder, source) for source in sources)
    assert (folder / "Other.Pkg" / "other_pkg" / "locale").is_dir()
    shutil.rmtree(folder / "fakepkg")
    fetch_catalogs(folder, sources=sources, index_url=url)
    assert calls[1:] == [["fakepkg==1.0"]]


def test_a_failed_download_names_the_wheel_that_failed(
    two_package_index, tmp_path
):
    """Where the one pip fails, each wheel is tried alone, so the error names
    the pin the index lacks, not all of them."""
    (first, second), url = two_package_index
    wrong = second._replace(version="3.0")
    with pytest.raises(CorpusError, match="download Other.Pkg==3.0") as error:
        fetch_catalogs(tmp_path / "kept", sources=(first, wrong), index_url=url)
    assert "fakepkg" not in str(error.value).split(":")[0]


def test_fetch_catalogs_refuses_a_wheel_with_another_checksum(
    package_index, tmp_path
):
    url, digest = package_index
    source = CatalogSource("fakepkg", "1.0", "0" * 64, "MIT")
    with pytest.raises(CorpusError, match="not the pinned"):
        fetch_catalogs(tmp_path / "kept", sources=(source,), index_url=url)
    assert not (tmp_path / "kept" / "fakepkg").exists()


def test_fetch_catalogs_names_a_version_the_index_lacks(
    package_index, tmp_path
):
    url, digest = package_index
    source = CatalogSource("fakepkg", "2.0", digest, "MIT")
    with pytest.raises(CorpusError, match="could not download fakepkg==2.0"):
        fetch_catalogs(tmp_path / "kept", sources=(source,), index_url=url)


def test_extract_catalogs_refuses_a_wheel_without_chinese(tmp_path):
    wheel = make_wheel(tmp_path, catalog=False)
    source = CatalogSource("fakepkg", "1.0", sha256(wheel), "MIT")
    with pytest.raises(CorpusError, match="no zh catalog"):
        extract_catalogs(wheel, source, tmp_path / "kept")


# -- tokenizer, baselines, scores --------------------------------------------------

TEXTS = [
    "the teacher waited for %(name)s",
    "Open the file",
    "删除 %s 个文件？",
    "Save as draft",
    "保存为草稿",
] * 5


def test_tokenizer_keeps_word_boundaries_and_placeholders():
    tokenizer = train_tokenizer(TEXTS, 120, keep_whole={"%(name)s", "%s"})
    assert [
        tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")
    ] == [0, 1, 2, 3]
    for text in [*TEXTS, "the teacher", "theteacher"]:
        assert tokenizer.decode(tokenizer.encode(text).ids) == text
    assert (
        tokenizer.encode("the teacher").ids
        != tokenizer.encode("theteacher").ids
    )
    assert "%(name)s" in tokenizer.encode("wait for %(name)s").tokens


def test_retrieval_returns_the_nearest_training_translation():
    pairs = [
        MessagePair("a", "Delete this event", "删除此活动"),
        MessagePair("a", "Open a file", "打开文件"),
    ]
    memory = Retrieval(pairs)
    assert memory.translate(["Delete this page", "Open a file"]) == [
        "删除此活动",
        "打开文件",
    ]
    (pair, similarity), _ = memory.nearest(["Delete this page", "x"])
    assert pair == pairs[0] and 0 < similarity < 1


def gensim_nearest(pairs, sources) -> list:
    """The obvious translation memory, message by message in gensim: what
    Retrieval computed before it was one sparse matrix product."""
    import gensim

    grams = [char_ngrams(p.source, 3) for p in pairs]
    dictionary = gensim.corpora.Dictionary(grams)
    bags = [dictionary.doc2bow(g) for g in grams]
    tfidf = gensim.models.TfidfModel(bags)
    index = gensim.similarities.SparseMatrixSimilarity(
        tfidf[bags], num_features=len(dictionary)
    )
    queries = [dictionary.doc2bow(char_ngrams(s, 3)) for s in sources]
    similarity = np.atleast_2d(index[tfidf[queries]])  # (sources, pairs)
    return [
        (pairs[b], float(row[b]))
        for b, row in zip(similarity.argmax(axis=1), similarity, strict=True)
    ]


def test_retrieval_refuses_an_empty_memory():
    with pytest.raises(ValueError, match="at least one pair"):
        Retrieval([])


def test_retrieval_finds_what_gensim_finds_on_small_messages():
    pairs = [
        MessagePair("a", text, str(n))
        for n, text in enumerate(
            [
                "Delete",
                "Delete this event",
                "Open a file",
                "open a File",
                "Delete",
                "Save %s",
                "x",
                "Open",
            ]
        )
    ]  # twice "Delete": the first of two equals is the answer
    sources = ["Delete this page", "Delete", "zzz", "Save %(name)s", "open"]
    assert Retrieval(pairs).nearest(sources) == gensim_nearest(pairs, sources)


@needs_catalogs
def test_retrieval_finds_what_gensim_finds_on_the_corpus(book_corpus):
    """The same pair and the same similarity, to the last bit, for dev and
    test messages against a sixth of the training messages (all of them
    agree too, but gensim takes minutes there)."""
    train = book_corpus["train"][::6]
    sources = [p.source for p in book_corpus["test"] + book_corpus["dev"]]
    sources = sources[::4]
    assert Retrieval(train).nearest(sources) == gensim_nearest(train, sources)


def test_placeholder_accuracy_wants_each_placeholder_exactly_as_often():
    sources = ["Delete %s?", "%(a)s and %(b)s", "no placeholder"]
    assert (
        placeholder_accuracy(sources, ["删除 %s？", "%(b)s 和 %(a)s", "无"])
        == 100
    )
    assert (
        placeholder_accuracy(sources, ["删除 %s %s？", "%(a)s 和", "无"]) == 0
    )
    with pytest.raises(ValueError, match="no source has a placeholder"):
        placeholder_accuracy(["none"], ["无"])


def test_scores_reject_lists_of_different_lengths():
    with pytest.raises(
        ValueError, match="2 sources, 1 hypotheses, 2 references"
    ):
        scores(["a %s", "b"], ["甲"], ["甲 %s", "乙"])


def test_scores_are_sacrebleu_zh_and_chrf():
    import sacrebleu

    sources, hyps, refs = (
        ["Open %s", "Save"],
        ["打开 %s", "保 存"],
        ["打开 %s", "保存"],
    )
    figures = scores(sources, hyps, refs)
    assert (
        figures["BLEU"]
        == sacrebleu.corpus_bleu(hyps, [refs], tokenize="zh").score
    )
    assert figures["chrF"] == sacrebleu.corpus_chrf(hyps, [refs]).score
    assert figures["placeholders"] == 100
    # the text between placeholders only: a copied placeholder earns nothing
    copied = scores(["Open %(name)s"], ["%(name)s"], ["打开 %(name)s"])
    assert copied["chrF"] > 0 and copied["chrF of the text"] == 0


def test_scores_prepare_each_test_set_once_and_never_mix_them():
    import sacrebleu

    first = (["Open %s", "Save"], ["打开 %s", "保存"])
    second = (["Close", "Delete %s"], ["关闭", "删除 %s"])
    hyps = ["打开 %s", "保 存"]
    figures = [
        scores(sources, hyps, refs)["chrF"]
        for sources, refs in (first, second, first, first)
    ]
    fresh = [
        sacrebleu.corpus_chrf(hyps, [refs]).score
        for refs in (first[1], second[1], first[1], first[1])
    ]
    assert figures == fresh and figures[0] != figures[1]
    bleu, chrf, _ = prepared_metrics(first[1])  # the metrics scores() used
    for prepared, metric in ((bleu, BLEU_ZH), (chrf, CHRF)):
        metric.corpus_score(hyps, [first[1]])
        assert prepared.get_signature().format() == (
            metric.get_signature().format()
        )


# -- the model that ships with the library --------------------------------------------


def test_the_shipped_model_loads_and_matches_the_corpus():
    model, tokenizer, record = load_translation_model()
    assert record["corpus_digest"] == CORPUS_DIGEST
    assert record["train_config"]["task"] == "gettext"
    assert tokenizer.token_to_id("<eos>") == EOS_ID
    assert not model.training


@needs_catalogs
def test_the_shipped_model_reproduces_its_committed_translations(
    book_corpus, shipped_model
):
    results = (
        Path(__file__).parent.parent
        / "benchmarks"
        / "results"
        / "gettext_test.json"
    )
    committed = json.loads(results.read_text(encoding="utf-8"))
    model, tokenizer, _ = shipped_model
    sources = [p.source for p in book_corpus["test"][:40]]
    constrained = translate(model, tokenizer, sources)  # the default
    plain = translate(
        model, tokenizer, sources, keep_tags=False, no_repeat_ngram=0
    )
    for again, key in ((constrained, "constrained"), (plain, "translations")):
        same = zip(again, committed[key], strict=False)
        assert sum(a == b for a, b in same) >= 39, key


@needs_catalogs
def test_constrained_translation_keeps_every_placeholder_and_loops_less(
    book_corpus, shipped_model
):
    """30 dev messages with placeholders, the 100th to the 129th: the model
    alone gets the placeholders of 5 wrong and loops in 2, enough to fail
    the constrained decoding's claims. (Greedy on the GPU, the shipped model
    loops in 14 of the 422 dev messages with placeholders; the first 30,
    which the CPU model before it got wrong 8 times and looped in 6, hold no
    loop now.) The
    model alone translates one message a batch: a loop runs its whole batch
    to the bound of the batch's longest source. The verdicts are the same;
    only the loops are cut at another length."""
    model, tokenizer, _ = shipped_model
    dev = [p.source for p in book_corpus["dev"]]
    sources = [s for s in dev if placeholders(s)][99:129]
    plain = translate(
        model,
        tokenizer,
        sources,
        batch_size=1,
        keep_tags=False,
        no_repeat_ngram=0,
    )
    # the model alone drops or repeats some: the test can fail
    assert placeholder_accuracy(sources, plain) < 95
    assert any(map(loops, sources, plain))
    constrained = translate(model, tokenizer, sources)
    assert placeholder_accuracy(sources, constrained) == 100
    assert sum(map(loops, sources, constrained)) < sum(
        map(loops, sources, plain)
    )


def slow_repeats(seq, n):
    """The tokens that would give seq an n-gram it holds: try each one."""
    grams = {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}
    return {
        t for t in range(10) if tuple([*seq, t][len(seq) + 1 - n :]) in grams
    }


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ban_repeated_ngrams_bans_exactly_the_repeating_tokens(n):
    import random

    import torch

    rng = random.Random(n)
    rows = [[rng.randrange(4) for _ in range(12)] for _ in range(50)]
    logits = torch.zeros(len(rows), 10)
    ban_repeated_ngrams(logits, torch.tensor(rows), n)
    for row, seq in zip(logits, rows, strict=True):
        banned = {t for t in range(10) if row[t] == -math.inf}
        assert banned == slow_repeats(seq, n)
    assert logits.isinf().any()  # 12 tokens of 4 kinds repeat something
    logits = torch.zeros(len(rows), 10)
    ban_repeated_ngrams(logits, torch.tensor(rows), 0)  # off
    assert not logits.isinf().any()
    with pytest.raises(ValueError, match="n-gram size -1"):
        ban_repeated_ngrams(logits, torch.tensor(rows), -1)


def test_ban_wrong_tags_counts_tags_and_puts_a_missing_one_before_eos():
    import collections

    import torch

    tags = [10, 11, 12]
    wanted = [
        collections.Counter({10: 2}),  # <ph0> twice; once so far
        collections.Counter({10: 1, 11: 1}),  # both written
        collections.Counter(),  # no placeholder at all
    ]
    ys = torch.tensor([[BOS_ID, 10, 5], [BOS_ID, 11, 10], [BOS_ID, 5, 6]])
    logits = torch.zeros(3, 13)
    logits[:, EOS_ID] = 5.0  # every row would stop now
    ban_wrong_tags(logits, ys, wanted, tags)
    assert logits[0].argmax() == 10  # the missing tag, where <eos> was
    assert logits[0, EOS_ID] == -math.inf and logits[0, 10] == 5.0
    assert logits[0, 11] == logits[0, 12] == -math.inf  # not in the source
    assert logits[1].argmax() == EOS_ID  # complete: it may stop
    assert (logits[1, tags] == -math.inf).all()  # each as often as wanted
    assert logits[2].argmax() == EOS_ID
    assert (logits[2, tags] == -math.inf).all()


def test_a_model_of_another_corpus_is_refused(tmp_path):
    import torch

    from transformer_course import Transformer, TransformerConfig

    tokenizer = train_tokenizer(TEXTS, 60)
    model = Transformer(
        TransformerConfig(
            tokenizer.get_vocab_size(),
            d_model=16,
            n_heads=2,
            n_layers=1,
            d_ff=32,
        )
    )
    path = tmp_path / "model.pt"
    save_translation_model(path, model, tokenizer)
    loaded, _, _ = load_translation_model(path)
    for name, weight in loaded.state_dict().items():
        assert torch.equal(weight, model.state_dict()[name].half().float())
    state = torch.load(path, weights_only=True)
    state["corpus_digest"] = "0" * 64
    torch.save(state, path)
    with pytest.raises(CorpusError, match="retrain it"):
        load_translation_model(path)
    torch.save({"model": model.state_dict()}, path)  # a training checkpoint
    with pytest.raises(
        CorpusError, match="not a model that save_translation_model wrote"
    ):
        load_translation_model(path)


def test_every_data_file_of_the_package_is_package_data():
    """A wheel (what Colab installs) holds only the files package-data names:
    catalog_sources.json was once missing from it, and chapter 7 broke."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parent.parent
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]
    patterns = setuptools["setuptools"]["package-data"]["transformer_course"]
    package = root / "transformer_course"
    data = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*")
        if path.is_file()
        and path.suffix not in {".py", ".pyc"}
        and "__pycache__" not in path.parts
    ]
    assert "data/catalog_sources.json" in data
    missing = [
        p for p in data if not any(fnmatch.fnmatch(p, g) for g in patterns)
    ]
    assert not missing, missing
