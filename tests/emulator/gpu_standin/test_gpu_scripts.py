"""Unmodified GPU scripts (scripts/) on this CPU-only machine, started by the real launchers with the stand-in
switched on only through the environment. The instance emulated is an ml.g5.12xlarge: 4 x A10G per host.

The multi-rank launches that `smtrain local` starts the same way (one process per GPU by mp.spawn, torchrun on two
hosts, SMDDP's mpirun) are tested through it alone (tests/emulator/test_local_gpu_scripts.py): its runs check every
rank, device, shard and collective that a launch of them from here would, and each rank costs a torch import. The
model-parallel script, one process, is tested here alone: `smtrain local` puts a model's stages on the stand-in's
cuda:0 and cuda:1 in test_local_examples.py's run of the model-parallel example."""

from __future__ import annotations

import json
import sys

import pytest

DATASET_SIZE = 64  # scripts/ddp_torchrun.py


def _assert_one_model(lines: list[dict], world_size: int, keys: tuple[str, ...]) -> None:
    """Every rank printed, ranks are 0..world_size-1, and they agree on `keys` (losses, weight checksums)."""
    assert sorted(line["rank"] for line in lines) == list(range(world_size))
    assert {line["world_size"] for line in lines} == {world_size}
    for key in keys:
        assert len({line[key] for line in lines}) == 1, f"ranks disagree on {key}: {lines}"


def _assert_shards_partition_the_dataset(lines: list[dict]) -> None:
    shards = [set(line["shard"]) for line in lines]
    assert sum(len(shard) for shard in shards) == DATASET_SIZE
    assert set().union(*shards) == set(range(DATASET_SIZE))


@pytest.mark.slow
def test_ddp_torchrun_one_node_one_process_per_gpu(standin):
    """torchrun's `--nproc-per-node gpu` counts the stand-in's GPUs: two here, not the instance's four, as any
    count shows it and each rank costs a torch import."""
    env = standin.environment(num_gpus=2)
    result = standin.run(standin.torchrun("--nproc-per-node", "gpu", "--master-port", env["MASTER_PORT"],
                                          str(standin.scripts / "ddp_torchrun.py")), env)
    lines = standin.json_lines(result.stdout)
    _assert_one_model(lines, world_size=2, keys=("final_loss", "checksum"))
    _assert_shards_partition_the_dataset(lines)
    assert {line["rank"]: line["device"] for line in lines} == {0: 0, 1: 1}


@pytest.mark.slow
def test_smddp_legacy_api_under_mpirun(standin):
    result = standin.run(standin.mpirun(2, standin.scripts / "smddp_legacy.py"), standin.environment(num_gpus=4))
    lines = standin.json_lines(result.stdout)
    _assert_one_model(lines, world_size=2, keys=("average_rank", "checksum"))  # DDP broadcast rank 0's weights
    assert lines[0]["average_rank"] == 0.5
    assert sorted(line["local_rank"] for line in lines) == [0, 1]


@pytest.fixture(scope="module")
def single_process_scripts(module_standin) -> dict[str, tuple[str, str]]:
    """The profiling, attention and model-parallel scripts on the instance's 4 GPUs, in one process (each
    start imports torch), the profiling first, as a fresh process runs it: each script's stdout and stderr."""
    return module_standin.parts([
        ("profiled_steps", str(module_standin.scripts / "profiled_steps.py"),
         [str(module_standin.work_dir / "traces")]),
        ("attention_kernels", str(module_standin.scripts / "attention_kernels.py"), []),
        ("model_parallel", str(module_standin.scripts / "model_parallel.py"), [])],
        module_standin.environment(num_gpus=4))


def _outcome(output: tuple[str, str]) -> dict:
    """A script's last line as JSON, or the test fails with what it wrote to stderr."""
    stdout, stderr = output
    return json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else pytest.fail(stderr)


def test_model_parallel_matches_the_unsplit_model(single_process_scripts):
    outcome = _outcome(single_process_scripts["model_parallel"])
    assert outcome["split_losses"] == outcome["whole_losses"]
    assert outcome["max_weight_difference"] == 0.0


def test_profiling_with_cuda_activity_records_the_cpu_ops_without_a_warning_per_op(single_process_scripts):
    """Asked for CUDA activity, a CPU build of torch that sees a GPU tries a CUDA event around every op and logs
    each failure with its C++ backtrace; the stand-in's profiler records the CPU only."""
    outcome = _outcome(single_process_scripts["profiled_steps"])
    stderr = single_process_scripts["profiled_steps"][1]
    assert {"aten::addmm", "aten::mm", "Optimizer.step#SGD.step"} <= set(outcome["recipe_ops"])
    assert "aten::addmm" in outcome["legacy_ops"]
    assert len(outcome["traces"]) == 1 and outcome["traces"][0].endswith(".pt.trace.json")
    assert "Self CPU" in outcome["table"]
    assert "Failed to record CUDA event" not in stderr
    assert len(stderr.splitlines()) < 20, stderr[-3000:]


def test_attention_on_a_gpu_only_kernel_runs_on_the_cpus_and_the_switches_read_as_set(single_process_scripts):
    """A CPU build has no memory-efficient or cuDNN attention kernel: asked for only those, it found no kernel."""
    outcome = _outcome(single_process_scripts["attention_kernels"])
    # flash, mem_efficient, math, cudnn: as the script switched them
    assert outcome["choices"] == {
        "efficient": {"equal": True, "inside": [False, True, False, False]},
        "cudnn": {"equal": True, "inside": [False, False, False, True]},
        "efficient_or_cudnn": {"equal": True, "inside": [False, True, False, True]},
        "switched_off_flash_and_math": {"equal": True, "inside": [False, True, False, True]}}
    assert outcome["after"] == [False, True, False, True]


@pytest.mark.slow
def test_prefetch_thread_streams_and_amp_train_to_the_end(standin):
    result = standin.run([sys.executable, "-W", "error::UserWarning", str(standin.scripts / "prefetch_amp.py")],
                         standin.environment(num_gpus=4))
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["finite"] is True
    assert (outcome["epochs"], outcome["steps"]) == (3, 8)
    assert outcome["autocast_dtype"] == "torch.bfloat16"
    assert outcome["elapsed_ms"] > 0
