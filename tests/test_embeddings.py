"""Chapter 1's library: tokenize, reproducible word2vec, the offline corpus, text8's checksum."""

import subprocess
import sys

import nltk
import pytest

from transformer_course import tokenize
from transformer_course.embeddings import download_text8, load_offline_corpus, train_word2vec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   ", []),
        ("The black cat sat.", ["The", "black", "cat", "sat", "."]),
        ("Don't stop, it's late!", ["Do", "n't", "stop", ",", "it", "'s", "late", "!"]),
        ("We can't, won't; they'd.", ["We", "ca", "n't", ",", "wo", "n't", ";", "they", "'d", "."]),
        ("One. Two? Three!", ["One", ".", "Two", "?", "Three", "!"]),
        ("It costs $3.50 (really).", ["It", "costs", "$", "3.50", "(", "really", ")", "."]),
    ],
)
def test_tokenize_splits_words_and_punctuation(text, expected):
    assert tokenize(text) == expected


def test_tokenize_matches_seed_sentence():
    sentence = "The black cat sat on the couch and the brown dog slept on the rug."
    assert tokenize(sentence) == [*sentence[:-1].split(), "."]


def test_tokenize_needs_no_downloaded_data(monkeypatch):
    def refuse(*args, **kwargs):
        raise LookupError("no NLTK data on this machine")

    monkeypatch.setattr(nltk.data, "load", refuse)
    monkeypatch.setattr(nltk.data, "find", refuse)
    assert tokenize("Isn't it?") == ["Is", "n't", "it", "?"]


def test_tokenize_rejects_non_text():
    with pytest.raises(TypeError, match="expects a str"):
        tokenize(["already", "tokens"])


def test_word2vec_is_reproducible_across_processes():
    """Same vectors in two processes with different string-hash seeds."""
    program = (
        "from transformer_course.embeddings import train_word2vec\n"
        "m = train_word2vec([['a', 'b', 'c', 'a', 'b']] * 20, vector_size=8, min_count=1)\n"
        "print(m.wv['a'].round(6).tolist())\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_word2vec_changes_with_seed():
    sentences = [["a", "b", "c", "a", "b"]] * 20
    first = train_word2vec(sentences, vector_size=8, min_count=1, seed=0)
    second = train_word2vec(sentences, vector_size=8, min_count=1, seed=1)
    assert not (first.wv["a"] == second.wv["a"]).all()


def test_offline_corpus_is_chunked_lowercase_text():
    corpus = load_offline_corpus(chunk_size=500)
    assert sum(map(len, corpus)) > 400_000
    assert max(map(len, corpus)) <= 500
    assert all(token == token.lower() for chunk in corpus[:50] for token in chunk)


def test_text8_with_wrong_checksum_is_refused_and_deleted(tmp_path):
    (tmp_path / "text8").write_text("not the real text8")
    with pytest.raises(ValueError, match="SHA-256"):
        download_text8(tmp_path)
    assert not (tmp_path / "text8").exists()
