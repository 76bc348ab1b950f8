"""Chapter 1's library: tokenize, reproducible word2vec, the offline corpus,
text8's checksum, the special tokens and the word vocabulary."""

import subprocess
import sys
from pathlib import Path

import nltk
import numpy as np
import pytest

from transformer_course import tokenize
from transformer_course.embeddings import (
    SPECIAL_TOKENS,
    build_vocabulary,
    download_text8,
    load_offline_corpus,
    train_word2vec,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   ", []),
        ("The black cat sat.", ["The", "black", "cat", "sat", "."]),
        (
            "Don't stop, it's late!",
            ["Do", "n't", "stop", ",", "it", "'s", "late", "!"],
        ),
        (
            "We can't, won't; they'd.",
            ["We", "ca", "n't", ",", "wo", "n't", ";", "they", "'d", "."],
        ),
        ("One. Two? Three!", ["One", ".", "Two", "?", "Three", "!"]),
        (
            "It costs $3.50 (really).",
            ["It", "costs", "$", "3.50", "(", "really", ")", "."],
        ),
    ],
)
def test_tokenize_splits_words_and_punctuation(text, expected):
    assert tokenize(text) == expected


def test_tokenize_matches_seed_sentence():
    sentence = (
        "The black cat sat on the couch and the brown dog slept on the rug."
    )
    assert tokenize(sentence) == [*sentence[:-1].split(), "."]


def test_tokenize_needs_no_downloaded_data(monkeypatch):
    def refuse(*args, **kwargs):
        raise LookupError("no NLTK data on this machine")

    monkeypatch.setattr(nltk.data, "load", refuse)
    monkeypatch.setattr(nltk.data, "find", refuse)
    assert tokenize("Isn't it?") == ["Is", "n't", "it", "?"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["already", "tokens"], "got list: is it already split"),
        (b"bytes", "got bytes: decode it first"),
        (None, "got NoneType"),
        (3.5, "got float"),
    ],
)
def test_tokenize_rejects_non_text(value, message):
    with pytest.raises(TypeError, match="tokenize expects a str") as error:
        tokenize(value)
    assert message in str(error.value)


def test_word2vec_is_reproducible_across_processes():
    """Same vectors in two processes with different string-hash seeds. Each
    loads this repository's transformer_course/embeddings.py (standard
    library only; gensim on first use) by its path: not the package, whose
    __init__ imports PyTorch (2 s of CPU a process), which word2vec never
    uses."""
    module = Path(__file__).resolve().parent.parent / "transformer_course"
    program = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location("
        "'embeddings', sys.argv[1])\n"
        "embeddings = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(embeddings)\n"
        "m = embeddings.train_word2vec("
        "[['a', 'b', 'c', 'a', 'b']] * 20, vector_size=8, min_count=1)\n"
        "print('torch' in sys.modules, m.wv['a'].round(6).tolist())\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", program, str(module / "embeddings.py")],
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert outputs.pop().startswith("False [")


def test_word2vec_changes_with_seed():
    sentences = [["a", "b", "c", "a", "b"]] * 20
    first = train_word2vec(sentences, vector_size=8, min_count=1, seed=0)
    second = train_word2vec(sentences, vector_size=8, min_count=1, seed=1)
    assert not (first.wv["a"] == second.wv["a"]).all()


def test_offline_corpus_is_chunked_lowercase_text():
    corpus = load_offline_corpus(chunk_size=500)
    assert sum(map(len, corpus)) > 400_000
    assert max(map(len, corpus)) <= 500
    assert all(
        token == token.lower() for chunk in corpus[:50] for token in chunk
    )


def test_text8_with_wrong_checksum_is_refused_and_deleted(tmp_path):
    (tmp_path / "text8").write_text("not the real text8")
    with pytest.raises(ValueError, match="SHA-256"):
        download_text8(tmp_path)
    assert not (tmp_path / "text8").exists()


@pytest.mark.parametrize(
    "sentences", [["the cat sat on the mat"], "the cat sat on the mat"]
)
def test_word2vec_refuses_untokenized_text(sentences):
    with pytest.raises(TypeError, match="tokenize it first"):
        train_word2vec(sentences, min_count=1)


@pytest.mark.parametrize("sentences", [[], [[]], [[], []]])
def test_word2vec_refuses_an_empty_corpus(sentences):
    with pytest.raises(ValueError, match="no tokens"):
        train_word2vec(sentences, min_count=1)


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("vector_size", 0),
        ("window", -1),
        ("min_count", 0),
        ("epochs", 2.5),
        ("epochs", True),
        ("sample", -0.1),
        ("sample", float("nan")),
    ],
)
def test_word2vec_rejects_bad_settings(argument, value):
    with pytest.raises(ValueError, match=argument):
        train_word2vec([["a", "b"]], **{"min_count": 1, argument: value})


def test_word2vec_sample_zero_trains_on_every_token():
    """The chapter's experiment: sample=0 moves the one-sentence vectors."""
    sentence = "the black cat sat on the couch and the brown dog".split()
    default = train_word2vec([sentence], vector_size=16, min_count=1)
    unsampled = train_word2vec(
        [sentence], vector_size=16, min_count=1, sample=0
    )
    untrained = train_word2vec(
        [sentence], vector_size=16, min_count=1, epochs=1
    )
    assert default.sample == 1e-3 and unsampled.sample == 0
    assert (unsampled.wv.vectors != default.wv.vectors).any()
    assert untrained.wv.vectors.shape == default.wv.vectors.shape


def test_offline_corpus_rejects_bad_chunk_size():
    with pytest.raises(ValueError, match="chunk_size"):
        load_offline_corpus(chunk_size=0)


def test_special_tokens_have_the_book_wide_ids():
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>", "<unk>")
    vocabulary = build_vocabulary([["b", "a", "b"], ["c", "a", "b"]])
    assert list(vocabulary.items()) == [
        ("<pad>", 0),
        ("<bos>", 1),
        ("<eos>", 2),
        ("<unk>", 3),
        ("b", 4),  # 3 times
        ("a", 5),  # 2 times
        ("c", 6),  # once
    ]


def test_vocabulary_min_count_and_ties_in_order_of_first_appearance():
    sentences = [["z", "y", "x"], ["y", "z", "w"]]
    assert list(build_vocabulary(sentences))[4:] == ["z", "y", "x", "w"]
    assert list(build_vocabulary(sentences, min_count=2))[4:] == ["z", "y"]


def test_vocabulary_keeps_special_tokens_once():
    vocabulary = build_vocabulary([["<unk>", "<pad>", "word"]])
    assert len(vocabulary) == 5 and vocabulary["word"] == 4


@pytest.mark.parametrize(
    ("sentences", "error", "match"),
    [
        (["a whole sentence"], TypeError, "tokenize it first"),
        ([["a"]], ValueError, "min_count"),
    ],
)
def test_vocabulary_rejects_bad_input(sentences, error, match):
    min_count = 0 if error is ValueError else 1
    with pytest.raises(error, match=match):
        build_vocabulary(sentences, min_count=min_count)


def test_importing_the_package_imports_neither_nltk_nor_gensim():
    """NLTK (which loads scipy.stats) and gensim cost seconds to import:
    only chapter 1's functions that use them import them, on first use."""
    program = (
        "import sys, transformer_course\n"
        "print(sorted({'nltk', 'gensim'} & set(sys.modules)))\n"
        "transformer_course.tokenize('Hello.')\n"
        "print('nltk' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["[]", "True"], result.stdout


def test_word2vec_takes_numpy_counts_and_names_a_bad_sample_or_seed():
    sentences = [["a", "b", "c", "a", "b"]] * 5
    model = train_word2vec(sentences, vector_size=np.int64(8), min_count=1)
    assert model.wv.vector_size == 8
    with pytest.raises(TypeError, match="sample must be a number"):
        train_word2vec(sentences, min_count=1, sample="0")
    with pytest.raises(ValueError, match="seed must be an int"):
        train_word2vec(sentences, min_count=1, seed="x")
