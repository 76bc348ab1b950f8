"""Run the book's chapters the way Google Colab runs them, on this machine.

Colab gives each notebook a fresh machine with its own Python and a few hundred
preinstalled packages; the chapter's first cell (the set-up cell) then clones this
repository, moves into its book/ folder and installs the library with pip. This
script rebuilds that here and runs every chapter in it:

1. **The runtime.** `tools/colab_runtime.json` pins Colab's Python (major.minor)
   and the versions of every preinstalled package the book's installation touches,
   taken from Colab's published package lists (see its "source"). A virtual
   environment with a Python of that version and exactly those versions is built
   once and cached (about 5 GB: PyPI's torch is a CUDA build; Colab's CPU runtime
   has the CPU build of the same release).
2. **A fresh machine per chapter.** A new, empty environment layered on that base
   (a `.pth` file puts the base's packages on its path, so pip sees them as
   preinstalled and installs anything new or different into the fresh one), a new
   home folder (empty caches; the fast form keeps pip's), a kernel that has
   imported `google.colab` (a stand-in module) as Colab's does.
3. **The chapter's own set-up cell**, with its repository pointed at a snapshot of
   this repository's HEAD (what Colab would clone; commit first) and its folder at
   a scratch folder instead of /content. Its last line asserts that pip worked;
   the simulation then checks that the kernel stands in the clone's book/.
4. **Then the chapter**, top to bottom (full form), or only what a chapter needs to
   start (fast form, run by tests/test_colab.py in CI): the set-up cell, then every
   import statement of the chapter's cells and of the library, lazy ones included.
5. **Afterwards,** no preinstalled package may have another version: on Colab that
   would ask the reader to restart the session, or break what is already imported.
   And nothing may be installed that the runtime file does not know (Colab may
   preinstall it at another version): then the file is stale, run describe.

    python tools/colab.py simulate --fast     # every chapter, fast form
    python tools/colab.py simulate --write benchmarks/results  # full, timed
    python tools/colab.py simulate 07_1       # one section, full form
    python tools/colab.py simulate --write benchmarks/results 07_1  # re-time
    python tools/colab.py notes               # the notes from the times
    python tools/colab.py describe --backend-info DIR  # the runtime file

`simulate` is the default: `python tools/colab.py --fast` is the same run.

With `simulate --write` (on a committed tree) the full form records each
chapter's time, set-up included, with a fingerprint of the chapter's code cells
and the dependencies, in benchmarks/results/colab_simulation.json, and rewrites
each chapter's "On Colab" note from it (`notes` does only that);
tests/test_colab.py fails when a note and the file disagree or a chapter changed
since its time was taken. The base lives in
~/.cache/transformer_course_colab ($TRANSFORMER_COURSE_COLAB_CACHE).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import date
from pathlib import Path

from notebooks import cell_text, read_notebook, write_notebook

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "tools" / "colab_runtime.json"
RESULTS = ROOT / "benchmarks" / "results" / "colab_simulation.json"

# What Colab's kernel has imported before the first cell runs: the set-up cells
# test `"google.colab" in sys.modules`. The stand-in is all the book needs of it.
COLAB_STUB = '''"""Stand-in for Colab's google.colab (tools/colab.py): its presence is what
the book's set-up cells look for."""
'''
# Kept with the base environment's cache key: a new builder makes a new base.
BUILDER_VERSION = "1"


class SimulationError(Exception):
    """The simulation could not be set up (not: a chapter failed in it)."""


def run(command, **kwargs) -> subprocess.CompletedProcess:
    """Run a command; on failure, raise with its output."""
    result = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        **kwargs,
    )
    if result.returncode != 0:
        raise SimulationError(
            f"{' '.join(map(str, command))} failed ({result.returncode}):\n"
            f"{(result.stdout + result.stderr).strip()[-3000:]}"
        )
    return result


# --- the runtime description -------------------------------------------------

RUNTIME_KEYS = {
    "about",
    "source",
    "commit",
    "commit_date",
    "taken",
    "os",
    "python",
    "torch",
    "preinstalled",
    "not_preinstalled",
}


def load_runtime(path=RUNTIME) -> dict:
    """The pinned description of Colab's runtime, checked."""
    runtime = json.loads(Path(path).read_text(encoding="utf-8"))
    missing = RUNTIME_KEYS - runtime.keys()
    if missing:
        raise SimulationError(f"{path}: missing {sorted(missing)}")
    if not re.fullmatch(r"3\.\d+\.\d+", runtime["python"]):
        raise SimulationError(f"{path}: python must read like 3.13.15")
    if not re.fullmatch(r"[0-9a-f]{40}", runtime["commit"]):
        raise SimulationError(f"{path}: commit must be a full git hash")
    for name, version in runtime["preinstalled"].items():
        if not re.fullmatch(r"[0-9][0-9A-Za-z.+!]*", version):
            raise SimulationError(f"{path}: {name} has no exact version")
    if "torch" in runtime["preinstalled"]:
        raise SimulationError(f"{path}: torch belongs in the torch block")
    return runtime


def base_pins(runtime: dict) -> list[str]:
    """pip requirements that rebuild the preinstalled packages."""
    pins = [f"{name}=={v}" for name, v in runtime["preinstalled"].items()]
    return pins + [f"torch=={runtime['torch']['simulated']}"]


def changed_packages(installed: dict, runtime: dict) -> dict:
    """Preinstalled packages whose installed version is not Colab's:
    {name: (Colab's, installed or None)}."""
    wanted = dict(runtime["preinstalled"], torch=runtime["torch"]["simulated"])
    return {
        name: (version, installed.get(name))
        for name, version in sorted(wanted.items())
        if installed.get(name) != version
    }


# --- environments --------------------------------------------------------------


def find_python(version: str) -> Path:
    """A Python of Colab's major.minor version: $COLAB_PYTHON, pythonX.Y on the
    PATH, or pyenv's newest X.Y.*."""
    minor = ".".join(version.split(".")[:2])
    candidates = []
    if os.environ.get("COLAB_PYTHON"):
        candidates.append(Path(os.environ["COLAB_PYTHON"]))
    if shutil.which(f"python{minor}"):
        candidates.append(Path(shutil.which(f"python{minor}")))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(
        pyenv.glob(f"versions/{minor}.*/bin/python{minor}"),
        key=lambda p: [int(x) for x in re.findall(r"\d+", p.parts[-3])],
        reverse=True,
    )
    for candidate in candidates:
        found = subprocess.run(
            [str(candidate), "-c", "import sys; print(sys.version.split()[0])"],
            capture_output=True,
            text=True,
        )
        if found.returncode == 0 and found.stdout.startswith(minor + "."):
            return candidate
    raise SimulationError(
        f"no Python {minor} found (Colab runs {version}): install it "
        f"(pyenv install {minor}) or point COLAB_PYTHON at one"
    )


def cache_dir() -> Path:
    # apart from the library's model cache: clearing that keeps this
    default = Path.home() / ".cache" / "transformer_course_colab"
    return Path(os.environ.get("TRANSFORMER_COURSE_COLAB_CACHE", default))


def site_packages(env: Path) -> Path:
    found = sorted(env.glob("lib/python3.*/site-packages"))
    if len(found) != 1:
        raise SimulationError(f"{env}: expected one site-packages, got {found}")
    return found[0]


def installed_versions(python: Path) -> dict:
    """{name: version} of every distribution the interpreter sees, first found
    on its path winning (as import does)."""
    script = (
        "import importlib.metadata as m, json, re\n"
        "seen = {}\n"
        "for d in m.distributions():\n"
        "    name = re.sub(r'[-_.]+', '-', d.metadata['Name']).lower()\n"
        "    seen.setdefault(name, d.version)\n"
        "print(json.dumps(seen))"
    )
    return json.loads(run([python, "-c", script]).stdout)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@contextlib.contextmanager
def base_environment(runtime: dict, python: Path, version: str, log=print):
    """The cached environment holding Colab's preinstalled versions, built
    once. While a simulation uses it, it holds a shared lock: simulations
    run side by side, and a build (which deletes the bases of older runtime
    files, about 5 GB each) waits until none runs."""
    recipe = json.dumps(
        [base_pins(runtime), COLAB_STUB, BUILDER_VERSION, version]
    )
    key = hashlib.sha256(recipe.encode()).hexdigest()[:16]
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    base = cache / f"base-{key}"
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # beside other simulations
        if not (base / "READY").exists():
            # alone: nobody else uses a base (the shared lock is given up
            # while waiting, so two that both wait do not block each other)
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (base / "READY").exists():  # or another one built it
                for old in cache.glob("base-*"):
                    shutil.rmtree(old)
                log(f"building Colab's preinstalled packages in {base} (once)")
                build_base(base, runtime, python, recipe)
            fcntl.flock(lock, fcntl.LOCK_SH)
        yield base


def build_base(base: Path, runtime: dict, python: Path, recipe: str) -> None:
    run([python, "-m", "venv", base])
    # uv where it is at hand (command 1 installs it): it downloads the 5 GB
    # in parallel, where pip takes one wheel after the other. Only how the
    # base is built differs: the same versions, checked below; the set-up
    # cell that a chapter's time measures still installs with Colab's pip.
    uv = shutil.which("uv") or shutil.which(
        "uv", path=str(Path(sys.executable).parent)
    )
    if uv:
        # compiled as pip compiles (Colab's packages come compiled)
        install = [uv, "pip", "install", "--quiet", "--no-cache"]
        install += ["--compile-bytecode"]
        install += ["--python", base / "bin" / "python"]
    else:
        install = [base / "bin" / "python", "-m", "pip", "install", "-q"]
        install += ["--no-cache-dir"]
    run([*install, *base_pins(runtime)])
    stub = site_packages(base) / "google" / "colab" / "__init__.py"
    stub.parent.mkdir(parents=True)  # google/ stays a namespace package
    stub.write_text(COLAB_STUB)
    wrong = changed_packages(
        installed_versions(base / "bin" / "python"), runtime
    )
    if wrong:
        raise SimulationError(f"the base environment is not Colab's: {wrong}")
    (base / "READY").write_text(recipe)


def fresh_environment(base: Path, python: Path, folder: Path) -> Path:
    """An empty environment that sees the base's packages as preinstalled;
    returns its python."""
    run([python, "-m", "venv", "--without-pip", folder])
    pth = site_packages(folder) / "_colab_preinstalled.pth"
    pth.write_text(f"{site_packages(base)}\n")
    return folder / "bin" / "python"


def uncommitted_changes() -> str:
    """git status of this checkout: what a snapshot of HEAD leaves out."""
    return run(["git", "-C", ROOT, "status", "--porcelain"]).stdout.strip()


def repository_snapshot(folder: Path, branch: str) -> str:
    """A bare repository whose `branch` is this repository's HEAD: what Colab
    clones. Uncommitted changes are not in it. Only HEAD's commit, as the
    set-up cell clones with --depth 1: the whole history (pushed, it took 10
    of the fast form's 35 seconds) would grow with every commit, unread."""
    run(["git", "init", "--quiet", "--bare", folder])
    fetch = ["git", "-C", folder, "fetch", "--quiet", "--depth", "1"]
    run([*fetch, f"file://{ROOT}", f"HEAD:refs/heads/{branch}"])
    return f"file://{folder}"


# --- notebooks -----------------------------------------------------------------

SETUP_MARKER = 'if "google.colab" in sys.modules:'


def setup_cell_index(notebook: dict) -> int:
    code = [
        i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code"
    ]
    if not code or SETUP_MARKER not in cell_text(notebook["cells"][code[0]]):
        raise SimulationError(
            f"the first code cell is not the Colab set-up cell ({SETUP_MARKER})"
        )
    return code[0]


def point_setup_cell(source: str, repo: str, book: str) -> str:
    """The set-up cell with its clone source and folder replaced; each
    assignment must appear exactly once."""
    for name, value in (("repo", repo), ("book", book)):
        pattern = re.compile(rf'^(\s+){name} = "[^"]*"$', re.MULTILINE)
        found = pattern.findall(source)
        if len(found) != 1:
            raise SimulationError(
                f'the set-up cell must assign {name} = "..." once, '
                f"found {len(found)}"
            )
        source = pattern.sub(
            lambda m, v=value, n=name: f'{m[1]}{n} = "{v}"', source
        )
    return source


# Run right after the set-up cell (whose last line asserts that pip worked):
# IPython's %cd only prints a failure, and the chapter must run in the clone's
# book/ folder, where its relative paths (../benchmarks/results) lead.
SETUP_CHECK = textwrap.dedent(
    """\
    import os as _os

    assert _os.path.samefile(_os.getcwd(), f"{book}/book"), _os.getcwd()
    """
)

# Cell magics whose body is Python that runs (its imports count).
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")


def python_of_cell(source: str) -> str:
    """A cell's IPython source as plain Python (magics become calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    first, _, body = source.lstrip().partition("\n")
    if first.split()[:1] and first.split()[0] in PYTHON_CELL_MAGICS:
        source = body
    return TransformerManager().transform_cell(source)


def import_statements(code: str) -> list[str]:
    """Every import statement of the code, at any depth (lazy imports inside
    functions included), except those guarded by `except ImportError` or
    `if TYPE_CHECKING`."""
    tree = ast.parse(code)
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            handler.type is None
            or any(
                isinstance(name, ast.Name)
                and name.id in {"ImportError", "ModuleNotFoundError"}
                for name in ast.walk(handler.type)
            )
            for handler in node.handlers
        ):
            guarded |= {id(n) for n in ast.walk(ast.Module(node.body, []))}
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(
            node.test
        ):
            guarded |= {id(n) for n in ast.walk(ast.Module(node.body, []))}
    found = []
    for node in ast.walk(tree):
        if id(node) in guarded or not isinstance(
            node, ast.Import | ast.ImportFrom
        ):
            continue
        if isinstance(node, ast.ImportFrom) and (
            node.level or node.module == "__future__"
        ):
            continue
        statement = ast.unparse(node)
        if statement not in found:
            found.append(statement)
    return found


def library_imports() -> list[str]:
    """The import statements of the library's modules (what installing it must
    provide)."""
    found = []
    for path in sorted((ROOT / "transformer_course").rglob("*.py")):
        for statement in import_statements(path.read_text(encoding="utf-8")):
            if statement not in found:
                found.append(statement)
    return found


def colab_notebook(
    notebooks: list[dict], repo: str, book: str, fast: bool
) -> dict:
    """What the simulation runs on one machine: a chapter (full form), or the
    set-up cell that the given chapters share and then every import of theirs
    and of the library (fast form)."""
    if not fast and len(notebooks) != 1:
        raise SimulationError("the full form runs one chapter per machine")
    setups = {cell_text(n["cells"][setup_cell_index(n)]) for n in notebooks}
    if len(setups) != 1:
        raise SimulationError("these chapters have different set-up cells")
    notebook = json.loads(json.dumps(notebooks[0]))
    index = setup_cell_index(notebook)
    cells = notebook["cells"]
    setup = dict(cells[index])
    setup["source"] = point_setup_cell(cell_text(setup), repo, book)
    setup["outputs"] = []
    check = code_cell(SETUP_CHECK)
    if fast:
        imports = []
        for chapter in notebooks:
            for cell in chapter["cells"][setup_cell_index(chapter) + 1 :]:
                if cell["cell_type"] == "code":
                    code = python_of_cell(cell_text(cell))
                    imports += import_statements(code)
        imports += library_imports()
        imports = list(dict.fromkeys(imports))
        notebook["cells"] = [setup, check, code_cell("\n".join(imports))]
    else:
        notebook["cells"] = cells[:index] + [setup, check] + cells[index + 1 :]
    return notebook


def code_cell(source: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": hashlib.sha256(source.encode()).hexdigest()[:8],
        "metadata": {},
        "outputs": [],
        "source": source,
    }


# --- running a chapter ---------------------------------------------------------


# The fast form keeps pip's cache between runs, in this folder of cache_dir():
# what pip downloaded, and the wheel it built from docopt's source (num2words
# needs it). The set-up cell installs the same packages either way; only the full
# form, whose times the chapters quote, starts with an empty cache as Colab does.
# So a build of docopt from its source that broke (a new setuptools, say) would
# show in the full form only, or in the fast form once this folder is emptied.
FAST_PIP_CACHE = "pip-cache-fast-form"


def kernel_environment(
    python: Path, base: Path, home: Path, ipython_dir: Path
) -> dict:
    """The kernel's environment: this machine's pip settings (the registries:
    PIP_* variables, and the user's pip.conf copied into the new home),
    nothing of this checkout's (no TRANSFORMER_COURSE_* caches, no .venv)."""
    keep = ("LANG", "LC_ALL", "TZ", "TERM")
    env = {
        k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")
    }
    user_pip = Path.home() / ".config" / "pip" / "pip.conf"
    if user_pip.exists():
        (home / ".config" / "pip").mkdir(parents=True, exist_ok=True)
        shutil.copy(user_pip, home / ".config" / "pip" / "pip.conf")
    env.update(
        # the base's console scripts too, as Colab's are on its PATH
        PATH=f"{python.parent}:{base / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        HOME=str(home),
        IPYTHONDIR=str(ipython_dir),
        # debugpy's note on frozen modules, printed at every kernel start
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    return env


def write_kernel(folder: Path, python: Path) -> tuple[Path, Path]:
    """A kernel spec for the fresh environment and an IPython profile whose
    start-up imports google.colab; returns (jupyter path, IPython dir)."""
    spec = folder / "jupyter" / "kernels" / "colab"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    str(python),
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": "Colab (simulated)",
                "language": "python",
            }
        )
    )
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-google-colab.py").write_text("import google.colab\n")
    return folder / "jupyter", folder / "ipython"


def run_machine(
    paths: list[Path],
    base: Path,
    python: Path,
    repo: str,
    fast: bool,
    runtime: dict,
    timeout: int,
) -> dict:
    """Run a chapter (or, fast, the chapters sharing a set-up cell) on a fresh
    simulated Colab machine; a result record."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import (
        CellExecutionError,
        CellTimeoutError,
        DeadKernelError,
    )

    with tempfile.TemporaryDirectory(prefix="colab-") as scratch:
        scratch = Path(scratch)
        env_python = fresh_environment(base, python, scratch / "env")
        jupyter_path, ipython_dir = write_kernel(scratch, env_python)
        (scratch / "content").mkdir()
        (scratch / "root").mkdir()
        book = scratch / "content" / "transformer-book"
        notebook = nbformat.from_dict(
            colab_notebook(
                [nbformat.read(p, as_version=4) for p in paths],
                repo,
                str(book),
                fast,
            )
        )
        client = NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="colab",
            resources={"metadata": {"path": str(scratch / "content")}},
        )
        env = kernel_environment(
            env_python, base, scratch / "root", ipython_dir
        )
        if fast:  # see FAST_PIP_CACHE
            env["PIP_CACHE_DIR"] = str(cache_dir() / FAST_PIP_CACHE)
        record = {"passed": False, "error": None, "setup_seconds": None}
        start = time.perf_counter()
        old_path = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = str(jupyter_path)
        try:
            with client.setup_kernel(env=env):
                for index, cell in enumerate(notebook.cells):
                    if cell.cell_type != "code":
                        continue
                    client.execute_cell(cell, index)
                    if record["setup_seconds"] is None:
                        record["setup_seconds"] = round(
                            time.perf_counter() - start, 1
                        )
            record["passed"] = True
        except (CellExecutionError, CellTimeoutError) as error:
            record["error"] = short_error(error)
        except (DeadKernelError, RuntimeError) as error:  # killed, or no start
            record["error"] = (
                f"the kernel died: {type(error).__name__}: {error}"
            )
        finally:
            if old_path is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old_path
        record["seconds"] = round(time.perf_counter() - start, 1)
        return verdict(
            record,
            installed_versions(env_python),
            own_distributions(scratch / "env"),
            runtime,
        )


def own_distributions(env: Path) -> set[str]:
    """The distributions installed into an environment itself (not seen
    through its .pth file): what the set-up cell installed."""
    return {
        normalise(path.name.split("-")[0])
        for path in site_packages(env).glob("*.dist-info")
    }


def verdict(record: dict, installed: dict, own: set, runtime: dict) -> dict:
    """A machine's record, failed when the set-up changed a preinstalled
    package (Colab would ask for a restart) or installed one that the
    runtime file does not know (it is stale: re-run describe)."""
    record = dict(record)
    changed = changed_packages(installed, runtime)
    if changed:
        record["changed"] = {k: list(v) for k, v in changed.items()}
    known = set(runtime["not_preinstalled"]) | {"transformer-course"}
    unknown = sorted(own - known - set(runtime["preinstalled"]) - {"torch"})
    if unknown:
        record["unknown"] = unknown
    if changed or unknown:
        record["passed"] = False
    return record


def short_error(error: Exception) -> str:
    """The end of a failed cell's traceback, without terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-12:])


def chapters(names: list[str]) -> list[Path]:
    every = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return every
    picked = []
    for name in names:
        match = [p for p in every if p.stem == name or p.stem.startswith(name)]
        if len(match) != 1:
            raise SimulationError(f"no single chapter matches {name!r}")
        picked += match
    return picked


def machines(paths: list[Path], fast: bool) -> list[list[Path]]:
    """The chapters each simulated machine runs: one each (full form), or all
    that share a set-up cell (fast form: running the same cell again on a fresh
    machine would install the same thing)."""
    if not fast:
        return [[path] for path in paths]
    groups = {}
    for path in paths:
        notebook = read_notebook(path)
        setup = cell_text(notebook["cells"][setup_cell_index(notebook)])
        groups.setdefault(setup, []).append(path)
    return list(groups.values())


def describe_failure(name: str, record: dict) -> str:
    lines = [f"{name}: FAILED"]
    if record.get("unknown"):
        lines.append(
            f"  the set-up installed {', '.join(record['unknown'])}, which "
            "tools/colab_runtime.json does not list (preinstalled on Colab, "
            "at which version?): run python tools/colab.py describe"
        )
    if record.get("changed"):
        for package, (colab, now) in record["changed"].items():
            lines.append(
                f"  the set-up changed Colab's {package} {colab} to {now}: "
                "Colab would ask for a restart"
            )
    if record.get("error"):
        lines.append(textwrap.indent(record["error"], "  "))
    return "\n".join(lines)


def simulate(names, fast: bool, write: Path | None, timeout: int) -> int:
    if write is not None and fast:
        raise SimulationError("--write records the full form, not --fast")
    paths = chapters(names)
    if not paths:
        raise SimulationError("no chapters found in book/")
    if uncommitted_changes():
        if write is not None:
            raise SimulationError(
                "uncommitted changes: --write records the times of HEAD, "
                "so commit first"
            )
        print("warning: uncommitted changes are not simulated (commit first)")
    runtime = load_runtime()
    python = find_python(runtime["python"])
    version = run(
        [python, "-c", "import platform; print(platform.python_version())"]
    ).stdout.strip()
    print(f"Colab runs Python {runtime['python']}; simulated with {version}")
    commit = run(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()
    results, failed = {}, 0
    with (
        base_environment(runtime, python, version) as base,
        tempfile.TemporaryDirectory(prefix="colab-origin-") as origin,
    ):
        repo = repository_snapshot(Path(origin) / "book.git", book_branch())
        for group in machines(paths, fast):
            name = (
                " ".join(p.stem[:2] for p in group) if fast else group[0].stem
            )
            record = run_machine(
                group, base, python, repo, fast, runtime, timeout
            )
            if not fast:
                record.update(
                    commit=commit,
                    date=date.today().isoformat(),
                    fingerprint=fingerprint(group[0], runtime),
                )
            results[name] = record
            if record["passed"]:
                print(
                    f"{name}: passed in {record['seconds']:.0f} s "
                    f"(set-up {record['setup_seconds']:.0f} s)"
                )
            else:
                failed += 1
                print(describe_failure(name, record))
    if write is not None:
        write_results(write, runtime, version, results)
        write_notes(Path(write) / RESULTS.name)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def code_shape(source: str) -> str:
    """A code cell as Python's parser sees it, without comments, docstrings or
    layout: what a change must touch to change how long the cell runs. A
    cell that is not Python (an IPython magic, a shell line) is kept as it is,
    less its comment lines."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        lines = source.splitlines()
        return "\n".join(
            line for line in lines if not line.lstrip().startswith("#")
        )
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # the docstring goes
    return ast.dump(tree)


def fingerprint(path: Path, runtime: dict) -> str:
    """What a chapter's measured time depends on: its code cells (their
    code_shape: a comment or a docstring changes nothing), the package's
    dependencies and Colab's runtime. tests/test_colab.py fails when a
    chapter's fingerprint is not the one its time was measured with."""
    notebook = read_notebook(path)
    code = [
        code_shape(cell_text(c))
        for c in notebook["cells"]
        if c["cell_type"] == "code"
    ]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dependencies = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    parts = [*code, dependencies, runtime["commit"]]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def book_branch() -> str:
    """The branch Colab clones: _config.yml's repository.branch."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return config["repository"]["branch"]


def write_results(
    folder: Path, runtime: dict, version: str, results: dict
) -> None:
    """Merge the chapters just run into folder/colab_simulation.json (all of
    them are replaced when the runtime file changed) and write its table."""
    path = Path(folder) / "colab_simulation.json"
    chapters_before = {}
    if path.exists():
        before = json.loads(path.read_text(encoding="utf-8"))
        if before.get("runtime_commit") == runtime["commit"]:
            chapters_before = before["chapters"]
    merged = dict(sorted({**chapters_before, **results}.items()))
    for name in list(merged):  # a chapter renamed or split into sections
        if not (ROOT / "book" / f"{name}.ipynb").exists():
            del merged[name]
    record = {
        "about": (
            "Each chapter run top to bottom on a fresh simulated Colab machine "
            "by tools/colab.py (full form); seconds include the set-up cell "
            "(clone and pip install). Each chapter's commit, date and "
            "fingerprint (its code cells, the dependencies, the runtime) are "
            "those of its run."
        ),
        "runtime_commit": runtime["commit"],
        "python": version,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "chapters": merged,
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    rows = [
        "| chapter | passed | minutes | set-up (s) | commit | date |",
        "|---|---|---:|---:|---|---|",
    ]
    for name, r in merged.items():
        rows.append(
            f"| {name} | {'yes' if r['passed'] else 'no'} | "
            f"{r['seconds'] / 60:.1f} | {r['setup_seconds'] or 0:.0f} | "
            f"{r['commit'][:7]} | {r['date']} |"
        )
    path.with_suffix(".md").write_text(
        f"Chapters on a simulated Colab CPU runtime ({record['machine']}, "
        f"Python {version}; tools/colab.py)\n\n" + "\n".join(rows) + "\n"
    )


def colab_cost(seconds: float) -> str:
    """How a chapter's "On Colab" note words its measured time."""
    if seconds < 60:
        return "less than a minute"
    minutes = int(seconds / 60 + 0.5)  # half a minute rounds up
    return f"about {minutes} minute{'s' if minutes > 1 else ''}"


NOTE = "**On Colab:**"
# the chapters (sections: 08_2_...) that use a GPU if Colab has one: to train
# their models, or to decode with the models that ship with the library
GPU_TRAINS = ("07_2",)
GPU_DECODES = ("08_1", "08_2")
# sections that load the shipped models and, with RETRAIN = True, train them
GPU_LOADS_OR_RETRAINS = ("07_3",)
# sections whose translation models go to the GPU, their small trials staying
# on the CPU
GPU_TRANSLATORS = ("09_2",)
# the prepared GPU run (benchmarks/gpu_run.py), which runs every chapter
# under nbval on the GPU lent
GPU_RUN = ROOT / "benchmarks" / "results" / "gpu_run.json"


def gpu_checked(
    stem: str, path: Path = GPU_RUN
) -> tuple[str, str | None] | None:
    """The GPU on which the prepared GPU run's nbval passed this notebook
    (every compared output the same as on a CPU), and the commit it ran;
    None where none did."""
    if not Path(path).exists():
        return None
    run = json.loads(Path(path).read_text())
    nbval = run["parts"].get("nbval", {}).get("result") or {}
    for chapter in nbval.get("chapters", []):
        if chapter["notebook"] == f"{stem}.ipynb":
            if chapter["outcome"] == "passed":
                environment = run["environment"]
                return environment["device"], environment.get("commit")
    return None


def code_unchanged_since(commit: str | None, stem: str) -> bool:
    """Whether the notebook's code cells and their outputs (what nbval
    compares) are what they were at commit; False where git cannot tell."""
    if not commit:
        return False
    name = f"{commit.removesuffix('-dirty')}:book/{stem}.ipynb"
    try:
        old = subprocess.run(
            ["git", "show", name],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return False

    def code(notebook):
        return [
            (cell_text(c), json.dumps(c.get("outputs", []), sort_keys=True))
            for c in notebook["cells"]
            if c["cell_type"] == "code"
        ]

    current = read_notebook(ROOT / "book" / f"{stem}.ipynb")
    return code(json.loads(old)) == code(current)


def colab_note(stem: str, seconds: float) -> str:
    """A chapter's "On Colab" note, the markdown cell just above its set-up
    cell: the runtime to pick and the chapter's measured time."""
    cost = colab_cost(seconds)
    unit = "section" if re.match(r"\d\d_\d+_", stem) else "chapter"
    measured = (
        "measured in a simulation of Colab's CPU runtime on two cores "
        "(`tools/colab.py`); Colab's own machines may be slower."
    )
    if stem.startswith("00"):
        text = (
            f"{NOTE} the default CPU runtime is enough for every chapter of "
            "this book, and a note like this one opens each chapter with what "
            f"it costs there. This one runs top to bottom in {cost} from a "
            f"fresh runtime, its set-up cell's clone and install included, "
            f"{measured}"
        )
    else:
        text = (
            f"{NOTE} the default CPU runtime is enough. From a fresh runtime "
            f"the {unit} runs top to bottom in {cost} there, its set-up "
            f"cell's clone and install included, {measured}"
        )
    paragraphs = [text]
    untested = (
        "The book's tests run without a GPU, so that path is untested here "
        "and its time unmeasured; the numbers it prints may differ from this "
        "page's."
    )
    checked = gpu_checked(stem)
    if checked:
        device, commit = checked
        loaded = (
            " (its models loaded, not retrained)"
            if stem.startswith(GPU_LOADS_OR_RETRAINS + GPU_TRANSLATORS)
            else ""
        )
        untested = (
            f"The prepared GPU run (`benchmarks/gpu_run.py`) passed the "
            f"{unit}'s tests on an {device}{loaded}; on a T4 it is untested, "
            "its time unmeasured."
        )
        if not code_unchanged_since(commit, stem):
            untested = (
                f"The prepared GPU run (`benchmarks/gpu_run.py`) passed the "
                f"tests of an earlier version of this {unit} (commit "
                f"{(commit or '?')[:7]}) on an {device}{loaded}; this version, "
                "and a T4, are untested there, the time unmeasured."
            )
    if stem.startswith(GPU_TRAINS):
        paragraphs.append(
            f"A GPU runtime (a T4) would train the {unit}'s models on the GPU, "
            f"in float16. {untested}"
        )
    if stem.startswith(GPU_DECODES):
        paragraphs.append(
            f"A GPU runtime (a T4) would load the {unit}'s models, which ship "
            f"with the library, onto the GPU and decode there. {untested}"
        )
    if stem.startswith(GPU_LOADS_OR_RETRAINS):
        paragraphs.append(
            f"A GPU runtime (a T4) would load the {unit}'s models, which ship "
            "with the library, onto the GPU and evaluate them there; with "
            f"`RETRAIN = True` it would train them there, in float16. {untested}"
        )
    if stem.startswith(GPU_TRANSLATORS):
        paragraphs.append(
            f"A GPU runtime (a T4) would load the {unit}'s translation models, "
            "which ship with the library, onto the GPU and decode there; with "
            "`RETRAIN = True` it would train them there, in float16. The four "
            f"runs of the LayerNorm trial stay on the CPU, in float32. {untested}"
        )
    return "\n\n".join(textwrap.fill(p, 80) for p in paragraphs)


def write_notes(results_path: Path = RESULTS) -> None:
    """Write each chapter's note from the measured times (a new markdown cell
    above the set-up cell, or the note already there)."""
    chapters_run = json.loads(Path(results_path).read_text())["chapters"]
    for path in chapters([]):
        notebook = read_notebook(path)
        text = colab_note(path.stem, chapters_run[path.stem]["seconds"])
        index = setup_cell_index(notebook)
        before = notebook["cells"][index - 1] if index else None
        if before and cell_text(before).startswith(NOTE):
            before["source"] = text.splitlines(keepends=True)
        else:
            cell = {"cell_type": "markdown", "id": "colab-note", "metadata": {}}
            cell["source"] = text.splitlines(keepends=True)
            notebook["cells"].insert(index, cell)
        write_notebook(path, notebook)


# --- describing the runtime ----------------------------------------------------


def read_freeze(text: str) -> dict:
    """{normalised name: version} of a `pip freeze` listing; a direct URL
    reference keeps the version in its wheel's file name."""
    versions = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if " @ " in line:
            name, url = line.split(" @ ", 1)
            found = re.search(
                r"-(\d[^-]*)-(?:cp|py)\d", url.replace("%2B", "+")
            )
            versions[normalise(name)] = found[1] if found else url
        else:
            name, _, version = line.partition("==")
            versions[normalise(name)] = version
    return versions


def describe(backend_info: Path, out: Path = RUNTIME) -> None:
    """Rewrite tools/colab_runtime.json from a clone of Colab's backend-info
    repository: install the book into a scratch environment of Colab's Python,
    constrained to Colab's versions, and keep every installed package that Colab
    preinstalls."""

    def show(name):
        return run(["git", "-C", backend_info, "show", f"HEAD:{name}"]).stdout

    commit, day = run(
        ["git", "-C", backend_info, "log", "-1", "--format=%H%n%cs"]
    ).stdout.split()
    cpu, gpu = (
        read_freeze(show("pip-freeze.txt")),
        read_freeze(show("pip-freeze.gpu.txt")),
    )
    os_lines = [
        line
        for line in show("os-info.txt").splitlines()
        if not line.startswith("#")
    ]
    python_version = os_lines[1].split()[1]
    torch_release = cpu["torch"].split("+")[0]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        constraints = scratch / "colab.txt"
        constraints.write_text(
            "\n".join(
                line
                for line in show("pip-freeze.txt").splitlines()
                # URL references are not constraints; the CUDA libraries of
                # PyPI's torch differ from what Colab's other packages pin
                if "==" in line and not line.startswith(("#", "nvidia-"))
            )
        )
        python = find_python(python_version)
        run([python, "-m", "venv", scratch / "env"])
        env_python = scratch / "env" / "bin" / "python"
        run(
            [
                env_python,
                "-m",
                "pip",
                "install",
                "-q",
                "-c",
                constraints,
                f"torch=={torch_release}",
                f"ipykernel=={cpu['ipykernel']}",
                f"ipython=={cpu['ipython']}",
                f"pip=={cpu['pip']}",
                ROOT,
            ]
        )
        installed = installed_versions(env_python)
    preinstalled = {
        name: cpu[name]
        for name in sorted(installed)
        if name in cpu and name != "torch" and not name.startswith("nvidia-")
    }
    differs = {n for n in preinstalled if gpu.get(n) != preinstalled[n]}
    runtime = {
        "about": (
            "Google Colab's runtime as tools/colab.py rebuilds it: the Python "
            "version and the preinstalled packages that installing the book "
            "touches, at the versions of Colab's CPU runtime (the GPU runtime "
            "has the same versions of these"
            + (f", except {sorted(differs)}" if differs else "")
            + "). Written by python tools/colab.py describe."
        ),
        "source": "https://github.com/googlecolab/backend-info "
        "(os-info.txt, pip-freeze.txt, pip-freeze.gpu.txt)",
        "commit": commit,
        "commit_date": day,
        "taken": date.today().isoformat(),
        "os": os_lines[0],
        "python": python_version,
        "torch": {
            "cpu_runtime": cpu["torch"],
            "gpu_runtime": gpu.get("torch"),
            "simulated": torch_release,
            "why": (
                "PyPI has no CPU build of torch for Linux; its build of the same "
                "release is a CUDA one, which runs on a CPU too"
            ),
        },
        "preinstalled": preinstalled,
        "not_preinstalled": sorted(
            n
            for n in installed
            if n not in cpu
            and n != "transformer-course"
            and not n.startswith(("nvidia-", "cuda-", "triton"))
        ),
    }
    out.write_text(json.dumps(runtime, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(preinstalled)} preinstalled packages pinned")


SUBCOMMANDS = ("simulate", "notes", "describe")


def parser() -> argparse.ArgumentParser:
    """simulate (the default), notes, describe: each its own arguments."""
    top = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    simulate_ = commands.add_parser(
        "simulate", help="run chapters on simulated Colab (the default)"
    )
    simulate_.add_argument(
        "chapters", nargs="*", help="chapter names (default: all)"
    )
    simulate_.add_argument(
        "--fast", action="store_true", help="set-up and imports only"
    )
    simulate_.add_argument(
        "--write", type=Path, help="folder for colab_simulation.json"
    )
    simulate_.add_argument(
        "--timeout", type=int, default=1200, help="seconds per cell"
    )
    notes = commands.add_parser(
        "notes", help="rewrite each chapter's note from the measured times"
    )
    notes.add_argument("--results", type=Path, default=RESULTS)
    describe_ = commands.add_parser(
        "describe", help="rewrite the runtime file from Colab's lists"
    )
    describe_.add_argument("--backend-info", type=Path, required=True)
    return top


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in (*SUBCOMMANDS, "-h", "--help"):
        argv.insert(0, "simulate")  # python tools/colab.py [--fast] [...]
    args = parser().parse_args(argv)
    try:
        if args.command == "describe":
            describe(args.backend_info)
            return 0
        if args.command == "notes":
            write_notes(args.results)
            return 0
        return simulate(args.chapters, args.fast, args.write, args.timeout)
    except SimulationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
