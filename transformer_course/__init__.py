"""The code of the Transformer book, exported from its chapters.

Public names by chapter; import them from the package itself, for example
`from transformer_course import MultiHeadAttention`:

- chapter 0 (Getting started): get_device, draw_architecture
- chapter 1 (From words to vectors): tokenize
- chapter 2 (Positional encoding): positional_encoding, PositionalEncoding
- chapter 3 (Attention in eight NumPy steps): softmax, scaled_dot_product_attention
- chapter 4 (Masking: padding and the future): padding_mask, causal_mask
- chapter 5 (Multi-head attention in PyTorch): MultiHeadAttention
- chapter 6 (The full Transformer): TransformerConfig, FeedForward, Residual, EncoderLayer, DecoderLayer, Transformer, count_parameters
- chapter 7 (Training the Transformer): CorpusError, fetch_catalogs, read_catalogs, strip_markup, strip_accelerators, clean, split_by_package, random_split, gettext_corpus, train_tokenizer, Retrieval, scores, CorpusTask, gettext_task, load_translation_model, greedy_translate, translate, Pair, grammar_pairs, chinese_numeral, english_number_words, Vocabulary, TranslationTask, make_task, token_batches, collate, BatchStream, label_smoothed_loss, noam_lr, TrainConfig, Run, fit, exact_match, save_checkpoint, load_checkpoint, train_or_load, DownloadError, download
- chapter 8 (Decoding and evaluation): greedy_decode, beam_search, bleu, exact_match_score
- chapter 9 (Beyond the paper): online_softmax_attention, rope, GroupedQueryAttention, grouped_query_transformer, DecoderCache, kv_cache_bytes

Exercise checkers: `transformer_course.exercises`, one `check_*` function per
exercise (`help(transformer_course.exercises)` explains them).

Each chapter's module (`transformer_course.attention`, ...) is exported from its
notebook by nbdev; this docstring is written by `nbdev-export` from
`book/_package_docstring.ipynb`, so edit it there."""

__version__ = "0.0.1"

# The public names of the book (see DESIGN.md), importable from the package itself.
# Everything but this list and exercises.py is exported from the chapters by nbdev.
from transformer_course.attention import scaled_dot_product_attention, softmax
from transformer_course.beyond import (
    DecoderCache,
    GroupedQueryAttention,
    grouped_query_transformer,
    kv_cache_bytes,
    online_softmax_attention,
    rope,
)
from transformer_course.decoding import (
    beam_search,
    bleu,
    exact_match_score,
    greedy_decode,
)
from transformer_course.embeddings import tokenize
from transformer_course.getting_started import draw_architecture, get_device
from transformer_course.masking import causal_mask, padding_mask
from transformer_course.multi_head_attention import MultiHeadAttention
from transformer_course.positional_encoding import (
    PositionalEncoding,
    positional_encoding,
)
from transformer_course.transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Residual,
    Transformer,
    TransformerConfig,
    count_parameters,
)

# Chapter 7 (transformer_course.train) loads on first use: imported here, it
# would be in sys.modules before `python -m transformer_course.train` runs it.
_TRAIN_NAMES = (
    "CorpusError fetch_catalogs read_catalogs strip_markup strip_accelerators "
    "clean split_by_package random_split gettext_corpus train_tokenizer "
    "Retrieval scores CorpusTask gettext_task load_translation_model translate "
    "BatchStream DownloadError Pair Run TrainConfig TranslationTask Vocabulary "
    "chinese_numeral collate download english_number_words exact_match fit "
    "grammar_pairs greedy_translate label_smoothed_loss load_checkpoint "
    "make_task noam_lr save_checkpoint token_batches train_or_load"
).split()


def __getattr__(name):
    if name in _TRAIN_NAMES:
        from transformer_course import train as chapter7

        return getattr(chapter7, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    *_TRAIN_NAMES,
    "DecoderCache",
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "GroupedQueryAttention",
    "MultiHeadAttention",
    "PositionalEncoding",
    "Residual",
    "Transformer",
    "TransformerConfig",
    "beam_search",
    "bleu",
    "causal_mask",
    "count_parameters",
    "draw_architecture",
    "exact_match_score",
    "get_device",
    "greedy_decode",
    "grouped_query_transformer",
    "kv_cache_bytes",
    "online_softmax_attention",
    "padding_mask",
    "positional_encoding",
    "rope",
    "scaled_dot_product_attention",
    "softmax",
    "tokenize",
]
