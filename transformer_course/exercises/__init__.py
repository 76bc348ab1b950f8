"""Checkers for the book's exercises, one module per chapter.

Each `check_*` function takes the learner's function, calls it on a few inputs and
compares the results with the expected ones:

- correct: prints "Correct: ...";
- still the stub (it raises `NotImplementedError`): prints "Not done yet: ..." and
  returns, so "run all" carries on to the reference solution;
- wrong: raises `ExerciseError`, whose message names the input, what was expected
  and what came back, with a hint when the answer matches a known mistake.

The checkers answer in English, or in Chinese (中文) after `set_language("zh")`
or with the environment variable `TRANSFORMER_COURSE_LANG=zh`, which the Chinese
notebooks set (`transformer_course.language`, the reader's language for the
whole book; `_i18n` translates, from the catalog in `transformer_course/locale/`).

This subpackage is hand-written (the rest of the package is exported from the
chapters): `_core` holds the shared machinery, `chNN` the checkers of chapter NN, and
`tests/test_exercises_chNN.py` proves that every checker rejects the known wrong answers.
"""

from transformer_course.exercises import ch00, ch01, ch02, ch03, ch04
from transformer_course.exercises import ch05, ch06, ch07, ch08, ch09
from transformer_course.exercises._core import ExerciseError
from transformer_course.language import language, set_language

_CHAPTERS = (ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09)
# every checker of every chapter, by the names each module's __all__ gives
globals().update({n: getattr(m, n) for m in _CHAPTERS for n in m.__all__})
__all__ = [
    "ExerciseError",
    "language",
    "set_language",
    *(n for m in _CHAPTERS for n in m.__all__),
]
