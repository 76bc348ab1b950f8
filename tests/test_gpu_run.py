"""benchmarks/gpu_run.py, the GPU run prepared on a CPU: its dry run
(--device cpu --tiny) end to end, its refusals, and the wheels it carries."""

import copy
import hashlib
import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_run = load("benchmarks/gpu_run.py", "gpu_run")
gpu_wheels = load("tools/gpu_wheels.py", "gpu_wheels")

ENVIRONMENT = {"device", "torch", "cuda", "python", "date", "commit"}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """The dry run, once: its results folder and gpu_run.json."""
    out = tmp_path_factory.mktemp("gpu_run")
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_run.py"),
            "--device",
            "cpu",
            "--tiny",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, json.loads((out / "gpu_run.json").read_text())


def test_dry_run_writes_the_files_the_device_tool_brings_back(dry_run):
    out, document = dry_run
    names = sorted(path.name for path in out.iterdir())
    assert names == ["gpu_run.json", "gpu_run.log", "gpu_run.md"]
    assert len(names) <= 8  # the device tool brings back at most 8 files
    assert document["tiny"] is True
    assert ENVIRONMENT <= set(document["environment"])
    assert document["environment"]["torch"] == torch_version()
    parts = document["parts"]
    assert list(parts) == list(gpu_run.PARTS)
    for name, record in parts.items():
        if name == "translator":
            assert record == {"status": "skipped", "reason": "not asked"}
            continue
        assert record["status"] == "ok", (name, record.get("error"))
        assert ENVIRONMENT <= set(record["environment"]), name
        assert record["environment"]["device"].endswith("CPU")
        # read from torch/version.py, without importing torch
        assert record["environment"]["torch"] == torch_version()
        assert 0 < record["seconds"] and record["limit_s"] >= 10
    report = (out / "gpu_run.md").read_text()
    for heading in ("## Training speed", "## nbval", "## fp16"):
        assert heading in report


def test_dry_run_training_table(dry_run):
    training = dry_run[1]["parts"]["training"]["result"]
    rows = training["rows"]
    assert set(rows) == {
        "Transformer (this book)",
        "nn.Transformer",
        "Transformer (this book), torch.compile",
    }
    for row in rows.values():
        for key in ("tokens_per_s", "mfu_measured_peak"):
            values = row[key]
            assert len(values["runs"]) >= 5
            assert values["min"] <= values["median"] <= values["max"]
            assert values["min"] > 0
        assert "mfu_datasheet" not in row  # a CPU has no datasheet entry
    ratio = rows["Transformer (this book)"]["tokens_per_s_over_nn_transformer"]
    assert len(ratio["runs"]) == training["windows"]
    # tokens per window over seconds, as the docstring says
    ours = rows["Transformer (this book)"]
    batch = training["batch"]
    tokens = (
        training["steps_per_window"]
        * batch["sentences"]
        * (batch["source_tokens"] + batch["target_tokens"])
    )
    assert ours["tokens_per_s"]["runs"] == pytest.approx(
        [tokens / t for t in ours["window_s"]["runs"]]
    )
    # the FLOP count agrees with PyTorch's counter, which on a CPU counts
    # the products by weights but not the fused attention
    flops, counted = (
        training["flops_per_step"],
        training["flop_counter_per_step"],
    )
    assert not any("scaled_dot" in op for op in counted["by_operator"])
    assert counted["total"] == flops["weights"]
    assert flops["total"] == flops["weights"] + flops["attention"] > 0
    assert training["datasheet_peak_flops_per_s"] is None
    assert training["matmul_peak"]["flops_per_s"]["median"] > 0
    assert training["host_syncs_in_step"].startswith("not checked")
    ran = training["kernels"]["Transformer (this book)"]
    assert ran["sdpa_backends"] and ran["sdpa_operators"]
    sweep = training["batch_sweep"]
    assert [row["sentences"] for row in sweep] == [1, 4]
    assert all(len(row["tokens_per_s"]["runs"]) == 5 for row in sweep)
    compiled = training["compile"]
    assert compiled["backend"] == "eager" and "error" not in compiled
    assert isinstance(compiled["paid"], bool)


def test_dry_run_nbval_records_a_pass_and_a_failure(dry_run):
    nbval = dry_run[1]["parts"]["nbval"]["result"]
    by_name = {r["notebook"]: r for r in nbval["chapters"]}
    assert set(by_name) == {"probe_pass.ipynb", "probe_fail.ipynb"}
    assert by_name["probe_pass.ipynb"]["outcome"] == "passed"
    assert by_name["probe_pass.ipynb"]["passed"] == 1
    failed = by_name["probe_fail.ipynb"]
    assert failed["outcome"] == "failed" and failed["failed"] == 1
    assert failed["failures"][0]["cell"] == "Cell 0"
    assert "41" in failed["failures"][0]["message"]
    assert "\x1b" not in failed["failures"][0]["message"]
    assert nbval["all_passed"] is False


def test_dry_run_benchmarks_and_fp16(dry_run):
    parts = dry_run[1]["parts"]
    expected = {
        "kv_cache": {"kv_cache_cpu.json", "kv_cache_cpu.md"},
        "gqa_repeat": {"gqa_repeat_cpu.json", "gqa_repeat_cpu.md"},
        "fused_attention": {
            "fused_attention_cpu.json",
            "fused_attention_cpu.md",
        },
    }
    for name, files in expected.items():
        result = parts[name]["result"]
        assert set(result["files"]) == files
        assert result["kernels"], name  # named from a profiler trace
    timings = parts["multi_head_attention"]["result"]["files"]
    assert set(timings) == {
        "multi_head_attention_cpu.json",
        "multi_head_attention_cpu.md",
    }
    rows = timings["multi_head_attention_cpu.json"]["lengths"]["16"]
    assert all(len(row["ms"]) == 5 for row in rows)  # every repeat kept
    kv = parts["kv_cache"]["result"]["files"]["kv_cache_cpu.json"]
    assert kv["decode_step_kernels"]["sdpa_operators"]
    for row in kv["per_token"]:
        assert len(row["decode_step_s"]["runs"]) >= 5
    gqa = parts["gqa_repeat"]["result"]["files"]["gqa_repeat_cpu.json"]
    assert all(len(row["seconds"]) >= 5 for row in gqa["rows"])
    assert {row["mask"] for row in gqa["rows"]} == {"padding", "none"}
    assert len(gqa["rows"]) == 2 * 2 * 3 * 3  # shapes, masks, h_kv, methods
    fused = parts["fused_attention"]["result"]["files"]
    assert fused["fused_attention_cpu.json"]["kernels_ran"]["float32"]
    assert "fastest-slowest" in fused["fused_attention_cpu.md"]
    fp16 = parts["fp16"]["result"]
    assert fp16["precision"] == "fp16" and fp16["tokens_per_second"] > 0
    assert fp16["losses"] and all(map(math.isfinite, fp16["losses"]))
    assert fp16["grad_scale"] > 0


def test_unpack_refuses_a_dry_run_and_writes_a_gpu_run(dry_run, tmp_path):
    out, document = dry_run
    with pytest.raises(SystemExit, match="dry run"):
        gpu_run.unpack(out, tmp_path / "results")
    gpu = copy.deepcopy(document)
    gpu["tiny"] = False
    gpu["environment"]["device"] = "NVIDIA H100 80GB HBM3"
    folder = tmp_path / "gpu"
    folder.mkdir()
    (folder / "gpu_run.json").write_text(json.dumps(gpu))
    (folder / "gpu_run.md").write_text("# report\n")
    written = gpu_run.unpack(folder, tmp_path / "results")
    assert sorted(path.name for path in written) == sorted(
        [
            "kv_cache_cpu.json",
            "kv_cache_cpu.md",
            "gqa_repeat_cpu.json",
            "gqa_repeat_cpu.md",
            "fused_attention_cpu.json",
            "fused_attention_cpu.md",
            "multi_head_attention_cpu.json",
            "multi_head_attention_cpu.md",
            "gpu_run.json",
            "gpu_run.md",
        ]
    )
    summary = (tmp_path / "results" / "gpu_run.md").read_text()
    assert summary == gpu_run.report(gpu)  # written again, not copied
    assert "## kv_cache_cpu.md" in summary
    kept = json.loads((tmp_path / "results" / "gpu_run.json").read_text())
    assert all(  # the files are written once, not also inside gpu_run.json
        "files" not in record.get("result", {})
        for record in kept["parts"].values()
    )
    bad = copy.deepcopy(gpu)
    bad["parts"]["kv_cache"]["result"]["files"] = {"../escape.md": "x"}
    (folder / "gpu_run.json").write_text(json.dumps(bad))
    with pytest.raises(SystemExit, match="unexpected file name"):
        gpu_run.unpack(folder, tmp_path / "other")


def test_report_keeps_a_failed_part_on_one_table_row(dry_run):
    _, document = dry_run
    gpu = copy.deepcopy(document)
    gpu["parts"]["kv_cache"] = {
        "status": "timed out",
        "error": "stopped after 45 s\n| 128 | a table | 1.5 |",
        "seconds": 45.1,
        "limit_s": 45,
    }
    row = next(
        line
        for line in gpu_run.report(gpu).splitlines()
        if line.startswith("| kv_cache |")
    )
    assert row == "| kv_cache | timed out: stopped after 45 s | 45.1 | 45 |"


def test_the_benchmarks_record_the_commit_gpu_run_was_given(monkeypatch):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import results_files

    monkeypatch.delenv(results_files.COMMIT_VARIABLE, raising=False)
    assert results_files.commit().split("-")[0] == gpu_run.git_commit()
    monkeypatch.setenv(results_files.COMMIT_VARIABLE, "abc123")
    assert results_files.commit() == "abc123"


def test_budget_spent_skips_parts(tmp_path):
    gpu_run.main(
        ["--device", "cpu", "--tiny", "--budget", "5", "--out", str(tmp_path)]
    )
    document = json.loads((tmp_path / "gpu_run.json").read_text())
    for name, record in document["parts"].items():
        assert record["status"] == "skipped", name
    assert document["parts"]["training"]["reason"] == "--budget 5.0 s spent"


def test_refusals(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OUT", raising=False)
    with pytest.raises(SystemExit):
        gpu_run.main(["--device", "cpu", "--tiny"])
    assert "give --out DIR" in capsys.readouterr().err
    if not gpu_run_has_gpu():
        with pytest.raises(SystemExit):
            gpu_run.main(["--device", "cuda", "--out", str(tmp_path)])
        assert "finds no CUDA GPU" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no .whl files"):
        gpu_run.install_wheels(tmp_path, tmp_path / "scratch")


def torch_version() -> str:
    import torch

    return torch.__version__


def gpu_run_has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def test_a_command_out_of_time_is_stopped():
    code, _ = gpu_run.run_command(
        [sys.executable, "-c", "import time; time.sleep(60)"], timeout=1
    )
    assert code is None


def test_step_flops_by_hand():
    from transformer_course.transformer import TransformerConfig

    config = TransformerConfig(
        vocab_size=10, d_model=4, n_heads=2, n_layers=1, d_ff=8
    )
    flops = gpu_run.step_flops(config, batch=1, t_src=2, t_tgt=3)
    # encoder: 2 tokens x (4*16 + 2*4*8); decoder: 3 x (6*16 + 64) + 2 x 32
    # (cross-attention's keys and values); output: 3 x 4 x 10
    weights = 2 * 128 + 3 * 160 + 2 * 32 + 120
    attention = 2 * 4 * (2 * 2 + 3 * 3) + 2 * 4 * 3 * 2
    assert flops == {
        "weights": 6 * weights,
        "attention": 6 * attention,
        "total": 6 * (weights + attention),
    }


def test_gpu_requirements_are_what_the_gpu_machine_lacks():
    pins = gpu_wheels.read_pins()
    needed = gpu_wheels.needed()
    assert set(pins) == set(needed), (
        "benchmarks/gpu_requirements.txt is out of date: run "
        "`python tools/gpu_wheels.py --requirements`; "
        f"missing {sorted(set(needed) - set(pins))}, "
        f"extra {sorted(set(pins) - set(needed))}"
    )
    image = {gpu_wheels.canonical(name) for name in gpu_wheels.IMAGE_PACKAGES}
    assert not set(pins) & image
    # what the chapters import beyond the image: all pinned
    for name in ("nbval", "ipykernel", "gensim", "nltk", "polib", "num2words"):
        assert name in pins
    # the pins of requirements.txt, where it has one, are the same
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name, _, version = line.split("#")[0].strip().partition("==")
        if gpu_wheels.canonical(name) in pins:
            assert pins[gpu_wheels.canonical(name)] == version, name


def test_read_pins_refuses_a_loose_pin(tmp_path):
    path = tmp_path / "pins.txt"
    path.write_text("nbval>=0.11\n")
    with pytest.raises(ValueError, match="not an exact pin"):
        gpu_wheels.read_pins(path)


def test_gensim_test_data_the_chapters_read_is_kept():
    kept = gpu_wheels.used_test_data()
    assert {
        "lee_background.cor",
        "questions-words.txt",
        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
    } <= kept


TINY_TRANSLATOR = (
    "--updates 2 --average 2 --threads 1 --set d_model=16 --set n_heads=2 "
    "--set n_layers=1 --set d_ff=32 --set max_tokens=256 --set warmup=1 "
    "--set eval_every=1"
)


def test_translator_part_trains_a_sweep_at_once(tmp_path, monkeypatch):
    """Two real (tiny) runs of train_gettext.py side by side, as the
    translator part starts them on a GPU, each with its --set."""
    import argparse

    monkeypatch.setenv("TRANSFORMER_COURSE_COMMIT", "abc123")  # as main sets
    args = argparse.Namespace(
        out=str(tmp_path),
        device="cpu",
        commit="abc123",
        part_timeout=200,
        translator_dev=False,
        translator_args=[
            TINY_TRANSLATOR,
            TINY_TRANSLATOR + " --set dropout=0.5",
        ],
    )
    result = gpu_run.translator_part(args, {}, save=None)
    first, second = result["runs"]
    for i, run in enumerate(result["runs"], 1):
        assert run["code"] == 0, run["printed"]
        assert [e[0] for e in run["evaluations"]] == [1, 2]
        assert run["record"]["updates"] == 2
        assert run["record"]["commit"] == "abc123"
        assert re.fullmatch(rf"gettext_zh_\d{{6}}_{i}\.pt", run["file"])
        assert (tmp_path / run["file"]).exists()
    assert first["train_config"]["d_model"] == 16
    assert first["train_config"]["dropout"] == 0.3  # the shipped model's
    assert second["train_config"]["dropout"] == 0.5
    # each run decoded on dev, as --translator-dev does after training
    dev = gpu_run.dev_evaluation(
        tmp_path / first["file"], tmp_path, "cpu", 200, messages=12
    )
    assert "error" not in dev, dev
    assert dev["split"] == "dev" and dev["device"] == "cpu"
    assert len(dev["constrained"]) == len(dev["greedy"]) == 12
    assert set(dev["scores"]) >= {"the model, constrained", "copy the source"}
    digest = hashlib.sha256((tmp_path / first["file"]).read_bytes())
    assert dev["model_sha256"] == digest.hexdigest()
    broken = gpu_run.dev_evaluation(tmp_path / "none.pt", tmp_path, "cpu", 60)
    assert broken["error"].startswith("exit 1")


def test_translators_rank_by_dev_bleu_else_by_their_last_dev_loss():
    """Not by the lowest dev loss along the way: the returned weights
    average the last evaluations."""

    def run(evaluations, bleu=None):
        found = {"evaluations": [[i, 0.0, d] for i, d in evaluations]}
        if bleu is not None:
            found["dev"] = {
                "scores": {"the model, constrained": {"BLEU": bleu}}
            }
        return found

    dipped = run([(1, 3.0), (2, 4.5)])  # lowest on the way, worst at the end
    steady = run([(1, 4.0), (2, 4.0)])
    assert sorted([dipped, steady], key=gpu_run.ranking_key) == [steady, dipped]
    decoded = [run([(1, 9.0)], bleu=12.0), run([(1, 1.0)], bleu=15.0)]
    ranked = sorted([dipped, *decoded], key=gpu_run.ranking_key)
    assert ranked == [decoded[1], decoded[0], dipped]


def test_train_gettext_refuses_a_bad_setting():
    import dataclasses

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_gettext

    config = train_gettext.TASK_CONFIGS["gettext"]
    changed = train_gettext.changed_config(
        config, ["n_layers=4", "dropout=0.4", "norm_first=True"]
    )
    assert (
        dataclasses.replace(config, n_layers=4, dropout=0.4, norm_first=True)
        == changed
    )
    for bad, says in [
        ("layers=4", "FIELD one of task, n_train"),
        ("dropout", "give FIELD=VALUE"),
        ("n_layers=4.5", "invalid literal for int"),
        ("norm_first=yes", "True or False"),
        ("dropout=1.5", "a probability"),
        ("label_smoothing=-0.1", "a probability"),
        ("max_tokens=0", "a positive number"),
        ("task=grammar", "gettext task only"),
        ("device=gpu9", "a torch device"),
        ("precision=bf8", "unknown precision 'bf8'"),
    ]:
        with pytest.raises(SystemExit, match=says):
            train_gettext.changed_config(config, [bad])


def test_install_wheels_installs_them_and_unpacks_the_catalogs(tmp_path):
    import tarfile
    import zipfile

    wheels = tmp_path / "whl"
    wheels.mkdir()
    info = "demo_pkg-1.0.dist-info"
    files = {
        "demo_pkg/__init__.py": "VALUE = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: demo-pkg\n"
        "Version: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + (
        f"{info}/RECORD,,\n"
    )
    with zipfile.ZipFile(wheels / "demo_pkg-1.0-py3-none-any.whl", "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    source = tmp_path / "catalogs" / "gramps"
    source.mkdir(parents=True)
    (source / "SOURCE.json").write_text("{}")
    with tarfile.open(wheels / "catalogs.tar.gz", "w:gz") as tar:
        tar.add(source, arcname="gramps")
    installed = gpu_run.install_wheels(wheels, tmp_path / "scratch")
    site = Path(installed["site"])
    assert (site / "demo_pkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert installed["wheels"] == ["demo_pkg-1.0-py3-none-any.whl"]
    catalogs = Path(installed["catalogs"])
    assert (catalogs / "gramps" / "SOURCE.json").read_text() == "{}"


def test_the_nbval_part_takes_every_chapter():
    from conftest import toc_notebooks

    chapters = gpu_run.chapters()
    assert sorted(chapters) == sorted(
        path for path in toc_notebooks() if path.parent.name == "book"
    )
    colab = json.loads(
        (ROOT / "benchmarks" / "results" / "colab_simulation.json").read_text()
    )["chapters"]
    seconds = [colab[path.stem]["seconds"] for path in chapters]
    assert seconds == sorted(seconds, reverse=True)  # the longest first
