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
- chapter 7 (Training the Transformer): CorpusError, fetch_catalogs, read_catalogs, strip_markup, strip_accelerators, clean, split_by_package, random_split, gettext_corpus, train_tokenizer, Retrieval, scores, CorpusTask, gettext_task, load_translation_model, greedy_translate, translate, Pair, grammar_pairs, chinese_numeral, english_number_words, Vocabulary, TranslationTask, make_task, label_smoothed_loss, noam_lr, TrainConfig, Run, fit, exact_match, token_batches, collate, BatchStream, save_checkpoint, load_checkpoint, train_or_load, DownloadError, download
- chapter 8 (Decoding and evaluation): NoCache, greedy_decode, beam_search, sequence_log_prob, sampling_distribution, sample, bleu, exact_match_score
- chapter 9 (Beyond the paper): online_softmax_attention, rope, GroupedQueryAttention, BeyondConfig, grouped_query_transformer, BeyondTrainConfig, DecoderCache, kv_cache_bytes

Exercise checkers: `transformer_course.exercises`, one `check_*` function per
exercise (`help(transformer_course.exercises)` explains them).

Each chapter's modules (`transformer_course.attention`, ...; chapters 7 and 9
write several, one concern each) are exported from its notebook by nbdev
(`python tools/export.py`); this docstring is written from
`book/_package_docstring.ipynb`, so edit it there."""

__version__ = "0.0.1"

# The public names of the book (CONTRIBUTING.md), importable from the package
# itself, chapter by chapter. Everything but this file and exercises/ is exported
# from the chapters (python tools/export.py). Chapter 7's command line,
# transformer_course.train, is not imported here: `python -m` runs it.
from transformer_course.getting_started import draw_architecture, get_device
from transformer_course import fonts as _fonts
from transformer_course.embeddings import tokenize
from transformer_course.positional_encoding import (
    PositionalEncoding,
    positional_encoding,
)
from transformer_course.attention import scaled_dot_product_attention, softmax
from transformer_course.masking import causal_mask, padding_mask
from transformer_course.multi_head_attention import MultiHeadAttention
from transformer_course.transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Residual,
    Transformer,
    TransformerConfig,
    count_parameters,
)
from transformer_course.catalogs import (
    CorpusError,
    fetch_catalogs,
    read_catalogs,
)
from transformer_course.corpus import (
    clean,
    gettext_corpus,
    random_split,
    split_by_package,
    strip_accelerators,
    strip_markup,
    train_tokenizer,
)
from transformer_course.translation import (
    CorpusTask,
    Retrieval,
    gettext_task,
    greedy_translate,
    load_translation_model,
    scores,
    translate,
)
from transformer_course.toy_tasks import (
    Pair,
    TranslationTask,
    Vocabulary,
    chinese_numeral,
    english_number_words,
    grammar_pairs,
)
from transformer_course.batching import BatchStream, collate, token_batches
from transformer_course.checkpoints import load_checkpoint, save_checkpoint
from transformer_course.training import (
    Run,
    TrainConfig,
    exact_match,
    fit,
    label_smoothed_loss,
    make_task,
    noam_lr,
)
from transformer_course.trained_models import train_or_load
from transformer_course.downloads import DownloadError, download
from transformer_course.decoding import (
    NoCache,
    beam_search,
    greedy_decode,
    sample,
    sampling_distribution,
    sequence_log_prob,
)
from transformer_course.evaluation import bleu, exact_match_score
from transformer_course.beyond import (
    BeyondConfig,
    GroupedQueryAttention,
    grouped_query_transformer,
    online_softmax_attention,
    rope,
)
from transformer_course.kv_cache import DecoderCache, kv_cache_bytes
from transformer_course.beyond_experiments import BeyondTrainConfig

# figures draw Chinese in the font the library ships (chapter 0), without
# importing matplotlib here: the font is registered when matplotlib loads it
_fonts.use_cjk_font_when_matplotlib_loads()

__all__ = [
    "BatchStream",
    "beam_search",
    "BeyondConfig",
    "BeyondTrainConfig",
    "bleu",
    "causal_mask",
    "chinese_numeral",
    "clean",
    "collate",
    "CorpusError",
    "CorpusTask",
    "count_parameters",
    "DecoderCache",
    "DecoderLayer",
    "download",
    "DownloadError",
    "draw_architecture",
    "EncoderLayer",
    "english_number_words",
    "exact_match",
    "exact_match_score",
    "FeedForward",
    "fetch_catalogs",
    "fit",
    "get_device",
    "gettext_corpus",
    "gettext_task",
    "grammar_pairs",
    "greedy_decode",
    "greedy_translate",
    "grouped_query_transformer",
    "GroupedQueryAttention",
    "kv_cache_bytes",
    "label_smoothed_loss",
    "load_checkpoint",
    "load_translation_model",
    "make_task",
    "MultiHeadAttention",
    "noam_lr",
    "NoCache",
    "online_softmax_attention",
    "padding_mask",
    "Pair",
    "positional_encoding",
    "PositionalEncoding",
    "random_split",
    "read_catalogs",
    "Residual",
    "Retrieval",
    "rope",
    "Run",
    "sample",
    "sampling_distribution",
    "sequence_log_prob",
    "save_checkpoint",
    "scaled_dot_product_attention",
    "scores",
    "softmax",
    "split_by_package",
    "strip_accelerators",
    "strip_markup",
    "token_batches",
    "tokenize",
    "train_or_load",
    "train_tokenizer",
    "TrainConfig",
    "Transformer",
    "TransformerConfig",
    "translate",
    "TranslationTask",
    "Vocabulary",
]
