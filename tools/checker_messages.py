"""The checkers' message catalog: every English template of
transformer_course/exercises/ and its Chinese translation, as gettext keeps
them (transformer_course/locale/zh_CN/LC_MESSAGES/exercises.po, compiled to
the .mo beside it, which the package ships and `_i18n` reads).

    python tools/zh.py messages     # extract, merge into the .po, compile

A template is a string literal of the checkers' modules (not `_i18n.py`,
which translates them) that is a message:
one with a space in it, or one given to `message`, `label` or `_by_hand`,
or one of `SINGLE_WORDS`; docstrings, `doc=` texts (the help of a checker,
English like the rest of the library's help), dictionary keys and the
literals of `NOT_MESSAGES` (sentences a checker computes on, separators,
patterns of error texts) are not. The extraction merges: a template that
stays keeps its translation, a new one comes in untranslated (tests/
test_zh.py fails until it is translated), and one no longer in the code
goes. A translation keeps the template's replacement fields (`{name}`,
`{item!r}`), which the same test checks.
"""

import ast
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "transformer_course" / "exercises"
PO = ROOT / "transformer_course" / "locale" / "zh_CN" / "LC_MESSAGES"
PO = PO / "exercises.po"
MO = PO.with_suffix(".mo")
MARKED_CALLS = {"message", "label", "_by_hand"}
# messages of one word, given to `message` through a variable
SINGLE_WORDS = {"source", "target", "NumPy's", "PyTorch's"}
NOT_MESSAGES = {
    # separators and patterns
    ", ",
    " + ",
    "Unsupported global: GLOBAL (\\S+)",
    "view size is not compatible",
    # the names of an answer's parts, code
    "(decoder_input, target)",
    "(matches, total)",
    # sentences and words the BLEU checkers compute on (chapter 8)
    "the the the the cat cat sat",
    "the the the cat sat",
    "the cat the cat",
    "a a a b",
    "x y z",
    "a b c d",
    "a b c",
    "a a a",
    "the the cat",
    "cat cat the sat",
    "the cat sat on the mat",
    "a cat sat there",
    "the cat is here",
    "cat the cat the",
    "b a",
    "a a b",
    "p q",
    "y z x",
    "a b",
}


def _not_messages(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are no message: docstrings, `doc=`
    texts, dictionary keys, f-strings' parts."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # docstrings, attribute docstrings
        elif isinstance(node, ast.keyword) and node.arg == "doc":
            skip |= {id(inner) for inner in ast.walk(node.value)}
        elif isinstance(node, ast.Dict):
            skip |= {id(key) for key in node.keys if key is not None}
        elif isinstance(node, ast.JoinedStr):
            skip |= {id(inner) for inner in ast.walk(node)}
    return skip


def _marked(tree: ast.AST) -> set[int]:
    """The ids of string arguments of `message`, `label` and `_by_hand`."""
    marked = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
            MARKED_CALLS
        ):
            marked |= {id(arg) for arg in node.args[:1]}
    return marked


def extract(folder: Path = EXERCISES) -> dict[str, list[str]]:
    """Every template of the checkers, with where it is (file:line)."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.py")):
        if path.name == "_i18n.py":  # the machinery that translates
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip, marked = _not_messages(tree), _marked(tree)
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Constant) and isinstance(node.value, str)
            ):
                continue
            text = node.value
            if id(node) in skip or text in NOT_MESSAGES or not text.strip():
                continue
            if " " in text or id(node) in marked or text in SINGLE_WORDS:
                shown = (
                    path.relative_to(ROOT)
                    if path.is_relative_to(ROOT)
                    else path
                )
                where = f"{shown}:{node.lineno}"
                found.setdefault(text, []).append(where)
    return found


def merged(po: polib.POFile | None = None) -> polib.POFile:
    """The catalog with the templates of the code now, translations kept."""
    old = po if po is not None else read()
    kept = {entry.msgid: entry.msgstr for entry in old if not entry.obsolete}
    new = polib.POFile(wrapwidth=0)
    new.metadata = {
        "Project-Id-Version": "transformer_course exercises",
        "Language": "zh_CN",
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    templates = extract()
    for text in sorted(templates, key=lambda t: (templates[t][0], t)):
        new.append(
            polib.POEntry(
                msgid=text,
                msgstr=kept.get(text, ""),
                occurrences=sorted(
                    {(w.rsplit(":", 1)[0], "") for w in templates[text]}
                ),
                flags=["python-brace-format"] if "{" in text else [],
            )
        )
    return new


def read() -> polib.POFile:
    if not PO.exists():
        return polib.POFile()
    return polib.pofile(str(PO), wrapwidth=0)


def write() -> tuple[int, int]:
    """Extract, merge, write the .po and compile the .mo: (templates,
    untranslated)."""
    po = merged()
    PO.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(PO))
    compiled(po).save_as_mofile(str(MO))
    return len(po), len(po.untranslated_entries())


def compiled(po: polib.POFile) -> polib.POFile:
    """The entries the .mo holds: the translated ones."""
    out = polib.POFile()
    out.metadata = po.metadata
    for entry in po.translated_entries():
        out.append(polib.POEntry(msgid=entry.msgid, msgstr=entry.msgstr))
    return out
