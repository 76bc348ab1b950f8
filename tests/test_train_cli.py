"""`python -m transformer_course.train`: exact resume across processes, and
DistributedDataParallel on two CPU processes equal to one process.

Each process the module starts costs about 4.5 s of CPU (PyTorch and
torch._dynamo, which the optimizer imports, 3.5 s; the task, 1 s), its few
updates the least of it. So what only gives the reference to compare with
(the uninterrupted run, the one-process run, the checkpoint a resumed run
starts from, --help) runs in this process, through the same main(); the
runs whose claim is about a fresh process (the resumed ones, the
distributed ones) are processes of their own."""

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import warnings

import pytest
import torch

# The numbers task: every process makes its task anew, and 400 training
# pairs of the numbers task cost half as much as the grammar task, which
# makes all of its 110,400 sentences whatever n_train is (0.96 s of CPU
# here against 1.9 s, most of it drawing the 1,000 held-out numbers from
# 17,000 to 17,999). 7 of this module's processes make a task.
SMALL = [
    "--task", "numbers", "--n-train", "400", "--d-model", "32", "--n-heads", "2", "--d-ff", "64",
    "--max-tokens", "300", "--warmup", "4", "--eval-every", "3", "--threads", "1",
    "--no-progress",
]  # fmt: skip


def _run(*args, module=("-m", "transformer_course.train")):
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "error::RuntimeWarning",
    }
    result = subprocess.run(
        [sys.executable, *module, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _here(*args):
    """main(args) in this process, as _run would run it: one thread, a
    RuntimeWarning an error; its printed output."""
    from transformer_course.train import main

    threads = torch.get_num_threads()
    out = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out):
            warnings.simplefilter("error", RuntimeWarning)
            main(list(args))
    finally:
        torch.set_num_threads(threads)
    return out.getvalue()


def _parameters(path):
    return torch.load(path, map_location="cpu", weights_only=True)["model"]


def test_help_lists_every_config_field(capsys):
    # main() parses the command line of `python -m transformer_course.train`
    # (the resumed runs below run the module itself, in processes of their
    # own): its --help, in this process
    from transformer_course.train import main
    from transformer_course.training import TrainConfig

    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m transformer_course.train")
    for field in TrainConfig.__dataclass_fields__:
        assert f"--{field.replace('_', '-')}" in out


def test_resume_in_a_fresh_process_is_exact(tmp_path):
    """k + m updates straight equal k updates and a checkpoint (here), and m
    more in a new process: the same parameters, bit for bit (dropout on)."""
    straight, split = tmp_path / "straight.pt", tmp_path / "split.pt"
    assert "step 6" in _here(
        *SMALL, "--updates", "6", "--checkpoint", str(straight)
    )
    assert "step 3" in _here(
        *SMALL, "--updates", "3", "--checkpoint", str(split)
    )
    assert torch.load(split, weights_only=True)["step"] == 3
    out = _run(*SMALL, "--updates", "6", "--checkpoint", str(split), "--resume")
    assert "step 6" in out.stdout
    assert torch.load(split, weights_only=True)["step"] == 6
    a, b = _parameters(straight), _parameters(split)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


# What PyTorch's gloo backend rarely prints when it aborts a process at exit,
# after the training, the barrier and destroy_process_group have all finished
# (std::terminate on a thread still joinable; seen once in a CI run, on rank 1).
EXIT_ABORT = "terminate called without an active exception"


def _torchrun(*args):
    """torchrun's two processes; run once more, and only once, when one died
    of gloo's abort at exit (EXIT_ABORT, above: the same command gives the
    same checkpoint)."""
    arguments = ("--standalone", "--nproc_per_node=2", "-m")
    arguments += ("transformer_course.train", *args)
    try:
        return _run(*arguments, module=("-m", "torch.distributed.run"))
    except AssertionError as error:
        if EXIT_ABORT not in str(error):
            raise
        return _run(*arguments, module=("-m", "torch.distributed.run"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch_two_ranks(command):
    """Start the two ranks of `command`; their return codes and outputs."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "error::RuntimeWarning",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
    }
    ranks = [
        subprocess.Popen(
            command,
            env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outputs = []
    try:
        for rank in ranks:
            outputs.append(rank.communicate(timeout=600)[0])
    finally:
        for rank in ranks:
            rank.kill()  # only if the other one failed or hung
            rank.wait()
    return [rank.returncode for rank in ranks], outputs


def _two_ranks(*args):
    """The two processes torchrun --standalone --nproc_per_node=2 starts, with
    the environment it gives them (rank, world size, rendezvous address), but
    without torchrun's own process (3 s of CPU a run: it imports PyTorch).
    Run once more, and only once, when rank 0 finished and the other rank
    died of gloo's abort at exit (EXIT_ABORT): the same command gives the
    same checkpoint (a --resume run finds its last one and has nothing left)."""
    command = [sys.executable, "-m", "transformer_course.train", *args]
    codes, outputs = _launch_two_ranks(command)
    if (
        codes[0] == 0
        and codes[1] != 0
        and outputs[1].strip().endswith(EXIT_ABORT)
    ):
        codes, outputs = _launch_two_ranks(command)
    assert codes == [0, 0], "\n".join(outputs)
    return outputs[0]


@pytest.mark.skipif(
    not torch.distributed.is_available(), reason="no torch.distributed"
)
class TestTwoProcesses:
    """Two processes: the module's longest tests (3 runs of two processes),
    a class of their own so that pytest -n 2 --dist loadscope can run them
    beside the one-process tests, on the other worker. The first runs
    torchrun itself; the second starts the two processes as torchrun does
    (_two_ranks), twice."""

    def test_two_processes_equal_one_with_the_same_global_batch(self, tmp_path):
        """torchrun --nproc_per_node=2 (gloo) with one micro-batch per
        process against one process accumulating two: the same parameters.

        The keys' bias is left out: softmax ignores it, so its gradient is
        rounding noise around 0, which Adam turns into steps of size lr in
        either direction (the model's outputs do not depend on it)."""
        common = [*SMALL, "--dropout", "0", "--updates", "5"]
        one, two = tmp_path / "one.pt", tmp_path / "two.pt"
        assert "step 5" in _here(
            *common, "--accumulate", "2", "--checkpoint", str(one)
        )
        assert "step 5" in _torchrun(*common, "--checkpoint", str(two)).stdout
        a, b = _parameters(one), _parameters(two)
        compared = [name for name in a if not name.endswith("k_proj.bias")]
        assert len(compared) > 20
        for name in compared:
            assert torch.allclose(a[name], b[name], atol=1e-5), (
                name,
                (a[name] - b[name]).abs().max().item(),
            )
        assert torch.load(two, weights_only=True)["step"] == 5

    def test_two_processes_resume_each_with_its_own_dropout_masks(
        self, tmp_path
    ):
        """2 processes (gloo), dropout on: 6 updates straight, keeping the
        checkpoint of update 3 too; from it, 3 more in new processes. Each process keeps its
        own random states through the checkpoint, so the masks of the two
        processes still differ after the resume, and the run equals the
        uninterrupted one. (Restoring the first process's states in both made
        them draw the same masks: the resumed run then differed from the
        straight one.)"""
        common = [*SMALL, "--dropout", "0.3"]
        # one uninterrupted run keeps its checkpoints of updates 3 and 6
        # ({step}); the resumed run starts from a copy of the first
        _two_ranks(
            *common,
            "--updates",
            "6",
            "--checkpoint",
            str(tmp_path / "s{step}.pt"),
        )
        straight, split = tmp_path / "s00006.pt", tmp_path / "split.pt"
        shutil.copyfile(tmp_path / "s00003.pt", split)
        assert torch.load(split, weights_only=True)["step"] == 3
        out = _two_ranks(
            *common, "--updates", "6", "--checkpoint", str(split), "--resume"
        )
        assert "step 6" in out
        for path in (straight, split):
            state = torch.load(path, weights_only=True)
            assert state["step"] == 6
            first, second = (s["torch"] for s in state["rng_per_rank"])
            assert not torch.equal(first, second)  # masks of their own
        a, b = _parameters(straight), _parameters(split)
        assert a.keys() == b.keys()
        for name in a:
            assert torch.equal(a[name], b[name]), name


def test_resume_refuses_a_step_pattern(tmp_path):
    # which of the files would it resume? the caller names one
    with pytest.raises(SystemExit, match="own name, not {step}"):
        _here(*SMALL, "--checkpoint", str(tmp_path / "s{step}.pt"), "--resume")


def test_resume_refuses_another_number_of_processes(tmp_path):
    from transformer_course.training import (
        Run,
        TrainConfig,
        make_task,
        resume,
        save_run,
    )

    config = TrainConfig(task="numbers", n_train=40, d_model=32, n_heads=2)
    # 10 test and validation pairs, not 1,000 and 500: seconds less to draw
    task = make_task("numbers", n_train=40, n_test=10, n_validation=10)
    run = Run(config, task)
    path = save_run(run, tmp_path / "one.pt")
    state = torch.load(path, weights_only=True)
    assert len(state["rng_per_rank"]) == 1
    run.world = 2  # as if resumed by two processes
    with pytest.raises(ValueError, match="written by 1 process"):
        resume(run, path)


def test_optional_int_fields_parse_as_ints():
    from transformer_course.train import _flag_type

    assert _flag_type(None)("2") == 2
    assert _flag_type(False)("true") is True
