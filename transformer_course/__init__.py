"""The code of the Transformer book, exported from its chapters."""

__version__ = "0.0.1"

# The public names of the book (see DESIGN.md), importable from the package itself.
# Everything but this list and exercises.py is exported from the chapters by nbdev.
from transformer_course.attention import scaled_dot_product_attention, softmax
from transformer_course.embeddings import tokenize
from transformer_course.getting_started import draw_architecture, get_device
from transformer_course.masking import causal_mask, padding_mask
from transformer_course.multi_head_attention import MultiHeadAttention
from transformer_course.positional_encoding import PositionalEncoding, positional_encoding
from transformer_course.transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Residual,
    Transformer,
    TransformerConfig,
    count_parameters,
)

__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "MultiHeadAttention",
    "PositionalEncoding",
    "Residual",
    "Transformer",
    "TransformerConfig",
    "causal_mask",
    "count_parameters",
    "draw_architecture",
    "get_device",
    "padding_mask",
    "positional_encoding",
    "scaled_dot_product_attention",
    "softmax",
    "tokenize",
]
