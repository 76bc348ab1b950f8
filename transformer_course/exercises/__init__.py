"""Checkers for the book's exercises, one module per chapter.

Each `check_*` function takes the learner's function, calls it on a few inputs and
compares the results with the expected ones:

- correct: prints "Correct: ...";
- still the stub (it raises `NotImplementedError`): prints "Not done yet: ..." and
  returns, so "run all" carries on to the reference solution;
- wrong: raises `ExerciseError`, whose message names the input, what was expected
  and what came back, with a hint when the answer matches a known mistake.

This subpackage is hand-written (the rest of the package is exported from the
chapters): `_core` holds the shared machinery, `chNN` the checkers of chapter NN, and
`tests/test_exercises_chNN.py` proves that every checker rejects the known wrong answers.
"""

from transformer_course.exercises._core import ExerciseError
from transformer_course.exercises.ch00 import (
    check_logsumexp,
    check_masked_mean,
    check_row_normalise,
)
from transformer_course.exercises.ch01 import (
    check_bpe_encode,
    check_cosine_similarity,
    check_most_similar,
    check_skipgram_pairs,
)
from transformer_course.exercises.ch02 import (
    check_fit_shift_matrix,
    check_positional_encoding,
    check_rotate_pair,
)
from transformer_course.exercises.ch03 import (
    check_additive_attention,
    check_attention,
    check_multi_head,
    check_softmax,
)
from transformer_course.exercises.ch04 import (
    check_additive_mask,
    check_causal_mask,
    check_decoder_mask,
    check_future_leaks,
    check_sliding_window_mask,
)
from transformer_course.exercises.ch05 import (
    check_causal_self_attention,
    check_einsum_attention,
    check_merge_heads,
    check_parameter_count,
    check_split_heads,
)
from transformer_course.exercises.ch06 import (
    check_decoder_layer_forward,
    check_pre_ln_encode,
    check_teacher_forcing,
    check_vocab_break_even,
)
from transformer_course.exercises.ch07 import (
    check_annotated_smoothing,
    check_half_peak_steps,
    check_rng_checkpoint,
    check_token_batches,
)
from transformer_course.exercises.ch08 import (
    check_beam_step,
    check_brevity_penalty_multi,
    check_clipped_matches_multi,
)
from transformer_course.exercises.ch09 import (
    check_kv_cache_size,
    check_merge_partials,
    check_repeat_kv_heads,
    check_cached_window_mask,
    check_rope_half,
)

__all__ = [
    "ExerciseError",
    "check_row_normalise",
    "check_logsumexp",
    "check_masked_mean",
    "check_skipgram_pairs",
    "check_cosine_similarity",
    "check_most_similar",
    "check_bpe_encode",
    "check_positional_encoding",
    "check_fit_shift_matrix",
    "check_rotate_pair",
    "check_softmax",
    "check_attention",
    "check_additive_attention",
    "check_multi_head",
    "check_causal_mask",
    "check_additive_mask",
    "check_sliding_window_mask",
    "check_decoder_mask",
    "check_future_leaks",
    "check_split_heads",
    "check_merge_heads",
    "check_causal_self_attention",
    "check_einsum_attention",
    "check_parameter_count",
    "check_pre_ln_encode",
    "check_decoder_layer_forward",
    "check_teacher_forcing",
    "check_vocab_break_even",
    "check_half_peak_steps",
    "check_token_batches",
    "check_annotated_smoothing",
    "check_rng_checkpoint",
    "check_clipped_matches_multi",
    "check_brevity_penalty_multi",
    "check_beam_step",
    "check_merge_partials",
    "check_kv_cache_size",
    "check_repeat_kv_heads",
    "check_cached_window_mask",
    "check_rope_half",
]
