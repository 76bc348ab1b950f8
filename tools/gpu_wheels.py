"""The wheels a lent GPU machine lacks, for benchmarks/gpu_run.py.

    python tools/gpu_wheels.py                 # download them into .whl/
    python tools/gpu_wheels.py --requirements  # rewrite the pins from .venv

The GPU machine (the device tool's 'cuda' image: Python 3.12, torch 2.11) has
no package registry, so what the chapters and nbval import and its image
lacks travels with the working tree as wheels, at most 64 MiB with the tree.
benchmarks/gpu_requirements.txt pins them: every distribution that the
project's dependencies (pyproject.toml), nbval and ipykernel need, followed
through their requirements as they would resolve on Python 3.12 on Linux
x86_64, at the versions installed here, minus IMAGE_PACKAGES (the image's
list, as KINDS.md gave it on 2026-11-17; what it has, it has with its own
requirements) and NOT_NEEDED. tests/test_gpu_run.py checks that the file
lists exactly that set.

Downloading writes .whl/ afresh: the wheels (pip download --only-binary for
CPython 3.12, manylinux x86_64), with gensim's test data cut down to the files
the repository names (gensim's wheel is 28 MB, 22 of them test data; the
chapters read three of its files), and catalogs.tar.gz, chapter 7's gettext
catalogs (transformer_course.fetch_catalogs()). It prints the sizes and stops
with an error when the wheels and the repository's files would pass 64 MiB.
"""

import argparse
import io
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "benchmarks" / "gpu_requirements.txt"
WHEELS = ROOT / ".whl"
LIMIT = 64 * 2**20  # what the device tool carries: tree and wheels
# The 'cuda' image's Python packages (KINDS.md, "Python packages already
# there", read on a machine on 2026-11-17)
IMAGE_PACKAGES = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc
anyio attrs botorch build certifi charset-normalizer chex click cloudpickle
cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils
execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec
gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt
jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader
lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath
msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx
ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti
nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink
nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy
portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest
pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu
safetensors scikit-build-core scikit-image scikit-learn scipy seaborn
sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions
typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray
xxhash yarl zipp
""".split()
# Required, but not imported by what runs there
NOT_NEEDED = {
    "docopt": "num2words' command-line script alone imports it; no wheel",
    # 4.9 and 4.0 MB that would take the tree past 64 MiB
    "jedi": "IPython imports it for tab completion only (_get_jedi)",
    "debugpy": "ipykernel runs without it (_is_debugpy_available)",
}
# The chapters' imports beyond pyproject.toml's dependencies: the kernel
# nbval starts, and nbval
EXTRA_ROOTS = ["nbval", "ipykernel"]
# How markers resolve on the GPU machine
TARGET = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "extra": "",
}
PLATFORMS = ["manylinux2014_x86_64", "manylinux1_x86_64"] + [
    f"manylinux_2_{n}_x86_64" for n in range(5, 40)
]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def roots() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    from packaging.requirements import Requirement

    names = [Requirement(r).name for r in project["project"]["dependencies"]]
    return names + EXTRA_ROOTS


def needed() -> dict[str, str]:
    """{distribution: version installed here} of everything the roots need
    on the GPU machine that its image lacks."""
    from packaging.requirements import Requirement

    image = {canonical(name) for name in IMAGE_PACKAGES}
    found, queue = {}, [canonical(name) for name in roots()]
    while queue:
        name = queue.pop()
        if name in found or name in image or name in NOT_NEEDED:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(
                f"{name} is needed on the GPU machine but is not installed "
                "here: install requirements.txt first"
            ) from None
        found[name] = distribution.version
        for line in distribution.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or marker.evaluate(TARGET):
                queue.append(canonical(requirement.name))
    return dict(sorted(found.items()))


def read_pins(path: Path = PINS) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, separator, version = line.partition("==")
            if not separator or not version:
                raise ValueError(f"{path}: not an exact pin: {line!r}")
            pins[canonical(name)] = version
    return pins


def write_pins(pins: dict[str, str], path: Path = PINS) -> None:
    header = [
        "# What benchmarks/gpu_run.py needs on a lent GPU machine and its",
        "# image lacks (Python 3.12, manylinux x86_64 wheels), at the versions",
        "# CI installs: written by `python tools/gpu_wheels.py --requirements`",
        "# and checked by tests/test_gpu_run.py. Left out (NOT_NEEDED there):",
        *(f"# {name}: {why}" for name, why in NOT_NEEDED.items()),
    ]
    lines = [f"{name}=={version}" for name, version in pins.items()]
    path.write_text("\n".join(header + lines) + "\n")


def used_test_data() -> set[str]:
    """The basenames of gensim test-data files the repository names."""
    text = "".join(
        path.read_text(encoding="utf-8")
        for pattern in ("book/*.ipynb", "transformer_course/*.py")
        for path in ROOT.glob(pattern)
    )
    # each name from the start of its run of name characters (the
    # lookbehind): the same names as without it, but without trying every
    # position of the notebooks' long base64 images (2.6 s of CPU, not 0.3)
    return set(re.findall(r"(?<![\w.-])[\w.-]+\.(?:cor|txt|bz2)", text))


def slim_gensim(wheel: Path) -> None:
    """Drop gensim/test/test_data/* but the files the repository names,
    and their RECORD lines (pip does not check RECORD's hashes)."""
    keep = used_test_data()
    prefix = "gensim/test/test_data/"
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(wheel) as old,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as new,
    ):
        dropped = {
            info.filename
            for info in old.infolist()
            if info.filename.startswith(prefix)
            and Path(info.filename).name not in keep
        }
        kept = {Path(name).name for name in old.namelist()} & keep
        if not kept:
            raise SystemExit(f"{wheel.name}: none of {sorted(keep)} found")
        for info in old.infolist():
            if info.filename in dropped:
                continue
            data = old.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines()
                data = "".join(
                    line + "\n"
                    for line in lines
                    if line.split(",")[0] not in dropped
                ).encode()
            new.writestr(info, data)
    wheel.write_bytes(buffer.getvalue())


def download(pins: dict[str, str], folder: Path = WHEELS) -> list[Path]:
    for old in folder.glob("*.whl"):  # one version of each, or pip stops
        old.unlink()
    folder.mkdir(exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--only-binary=:all:", "--python-version", "3.12",
        "--implementation", "cp", "--dest", str(folder),
    ]  # fmt: skip
    for platform in PLATFORMS:
        command += ["--platform", platform]
    command += [f"{name}=={version}" for name, version in pins.items()]
    subprocess.run(command, check=True)
    wheels = sorted(folder.glob("*.whl"))
    names = {canonical(w.name.split("-")[0]) for w in wheels}
    if missing := set(pins) - names:
        raise SystemExit(f"no wheel downloaded for {sorted(missing)}")
    for wheel in wheels:
        if canonical(wheel.name.split("-")[0]) == "gensim":
            slim_gensim(wheel)
    return wheels


def pack_catalogs(folder: Path = WHEELS) -> Path:
    from transformer_course.catalogs import (
        CATALOG_SOURCES,
        catalog_dir,
        is_kept,
    )

    source = catalog_dir()
    for catalog in CATALOG_SOURCES:
        if not is_kept(source, catalog):
            done = source / catalog.package / "SOURCE.json"
            raise SystemExit(
                f"{done} is missing or stale: run "
                "`python -c 'import transformer_course as tc; "
                "tc.fetch_catalogs()'` first"
            )
    archive = folder / "catalogs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for catalog in CATALOG_SOURCES:
            tar.add(source / catalog.package, arcname=catalog.package)
    return archive


def tree_bytes() -> int:
    """Bytes of what the device tool sends: tracked files and untracked ones
    git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    paths = [ROOT / p for p in out.decode().split("\0") if p]
    return sum(p.stat().st_size for p in paths if p.is_file())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--requirements",
        action="store_true",
        help=f"rewrite {PINS.relative_to(ROOT)} from this environment",
    )
    args = parser.parse_args(argv)
    if args.requirements:
        write_pins(needed())
        print(f"wrote {PINS}")
        return
    pins = read_pins()
    if set(pins) != set(needed()):
        raise SystemExit(
            f"{PINS.name} is out of date: run tools/gpu_wheels.py "
            "--requirements"
        )
    wheels = download(pins)
    catalogs = pack_catalogs()
    carried = sum(p.stat().st_size for p in [*wheels, catalogs])
    tree = tree_bytes()
    for path in [*wheels, catalogs]:
        print(f"{path.stat().st_size / 2**20:7.2f} MiB  {path.name}")
    print(
        f"{carried / 2**20:.1f} MiB in {WHEELS.name}/, {tree / 2**20:.1f} MiB "
        f"of repository: {(carried + tree) / 2**20:.1f} of 64 MiB"
    )
    if carried + tree > LIMIT:
        raise SystemExit("over the device tool's 64 MiB")


if __name__ == "__main__":
    main()
