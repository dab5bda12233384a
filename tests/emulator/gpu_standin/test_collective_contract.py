"""NCCL's contract for each collective a framework calls, kept by the stand-in on gloo: scripts/collective_contract.py
runs every call on an NCCL group under the stand-in (2 and 4 ranks, torchrun on loopback), and each rank's result is
compared with what NCCL's documentation says that call returns, computed here from the same inputs.
scripts/bfloat16_collectives.py does the same for bfloat16, which NCCL reduces, under Debian's torch 1.13 too, whose
gloo has no bfloat16."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

OLDER_PYTHON = "/usr/bin/python3"  # Debian's, with torch 1.13 (docs/host-file-system.md)


@pytest.fixture(scope="module", params=[2, 4], ids=lambda world: f"{world}-ranks")
def run(request, module_standin):
    """World size and every rank's results (case -> {"shape", "values"}), from one torchrun of the script."""
    world = request.param
    out = module_standin.work_dir / f"world{world}"
    out.mkdir()
    env = module_standin.environment(num_gpus=4)
    module_standin.run(module_standin.torchrun("--nproc-per-node", str(world), "--master-port", env["MASTER_PORT"],
                                               str(module_standin.scripts / "collective_contract.py"), str(out)), env)
    return world, [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(world)]


def _block(rank: int) -> torch.Tensor:
    return torch.arange(6, dtype=torch.float32).reshape(2, 3) + 100 * rank


def _scatter_input(rank: int, world: int) -> torch.Tensor:
    return torch.arange(world * 6, dtype=torch.float32).reshape(world * 2, 3) + rank


def _assert_result(result: dict, expected: torch.Tensor) -> None:
    assert result["shape"] == list(expected.shape)
    assert result["values"] == expected.flatten().tolist()


@pytest.mark.slow
@pytest.mark.parametrize(("case", "shape"), [
    ("all_gather_into_tensor_flat", lambda world: (world * 6,)),  # Accelerate's gather of a 2-D tensor
    ("all_gather_into_tensor_stacked", lambda world: (world, 2, 3)),
    ("all_gather_into_tensor_concatenated", lambda world: (world * 2, 3)),
    ("all_gather_into_tensor_flat_async", lambda world: (world * 6,)),
    ("all_gather_into_tensor_requires_grad", lambda world: (world * 2, 3)),  # gloo alone refuses it
    ("all_gather_base_flat", lambda world: (world * 6,)),
])
def test_all_gather_into_tensor_fills_any_output_of_world_times_numel(run, case, shape):
    """NCCL: the output holds every rank's input in rank order, in any shape of world x numel elements."""
    world, ranks = run
    everyone = torch.stack([_block(rank) for rank in range(world)])
    for results in ranks:
        _assert_result(results[case], everyone.reshape(shape(world)))


@pytest.mark.slow
def test_all_gather_into_tensor_of_a_parameter_clone(run):
    """Accelerate's `gather` of a model's weight (its published test_script.py checks every rank holds the same
    model this way): gloo alone fails, as its output views were made without grad; NCCL only reads the input."""
    world, ranks = run
    for results in ranks:
        _assert_result(results["all_gather_into_tensor_of_a_weight"], torch.arange(world, dtype=torch.float32))


@pytest.mark.slow
def test_coalesced_all_gathers_with_a_device_complete_under_one_handle(run):
    world, ranks = run
    everyone = torch.stack([_block(rank) for rank in range(world)]).flatten()
    for results in ranks:
        _assert_result(results["all_gather_into_tensor_coalesced"], torch.cat([everyone, everyone * 2]))


@pytest.mark.slow
@pytest.mark.parametrize(("case", "scale"), [("reduce_scatter_tensor", lambda world: 1.0),
                                             ("reduce_scatter_tensor_avg", lambda world: 1.0 / world),
                                             ("reduce_scatter_tensor_premul_sum", lambda world: 0.5)])
def test_reduce_scatter_tensor_gives_each_rank_its_reduced_chunk(run, case, scale):
    """NCCL: rank r receives chunk r of the element-wise reduction of every rank's input; PREMUL_SUM multiplies
    each input by the factor before summing."""
    world, ranks = run
    total = sum(_scatter_input(rank, world) for rank in range(world)) * scale(world)
    for rank, results in enumerate(ranks):
        _assert_result(results[case], total.chunk(world)[rank])
        _assert_result(results["reduce_scatter_tensor_input_kept"], _scatter_input(rank, world))


@pytest.mark.slow
def test_all_to_all_single_with_uneven_splits(run):
    """Rank r sends r + j + 1 elements, all equal to 10 r + j, to rank j, which keeps them in sender order."""
    world, ranks = run
    for rank, results in enumerate(ranks):
        expected = torch.cat([torch.full((sender + rank + 1,), 10.0 * sender + rank) for sender in range(world)])
        _assert_result(results["all_to_all_single_uneven"], expected)


@pytest.mark.slow
@pytest.mark.parametrize(("case", "reduce"), [
    ("all_reduce_avg", lambda values: sum(values) / len(values)),
    ("all_reduce_premul_sum_scalar", lambda values: 0.25 * sum(values)),
    ("all_reduce_premul_sum_tensor", lambda values: 2.0 * sum(values)),
])
def test_all_reduce_with_nccl_only_ops(run, case, reduce):
    world, ranks = run
    expected = torch.full((3,), reduce([rank + 1.0 for rank in range(world)]))
    for results in ranks:
        _assert_result(results[case], expected)


@pytest.mark.slow
def test_async_all_reduces_and_barrier_with_device_ids(run):
    world, ranks = run
    for results in ranks:
        assert results["all_reduce_async"]["values"] == [2 * world * (world + 1) / 2, 2.0 * world * (world - 1) / 2]
        assert results["barrier_device_ids"]["values"] == "passed"


@pytest.mark.slow
def test_waiting_on_the_last_async_collective_finishes_the_earlier_ones(run):
    """NCCL runs a group's collectives in order on one stream: once the last async work is waited on, every earlier
    one's result is there (gloo, by default, runs two at once on two threads)."""
    world, ranks = run
    for results in ranks:
        assert results["all_reduce_async_in_order"]["values"] == [100_000 * world * (world + 1) / 2]


@pytest.mark.slow
def test_object_collectives(run):
    world, ranks = run
    for rank, results in enumerate(ranks):
        assert results["all_gather_object"]["values"] == [{"rank": peer, "name": f"r{peer}"} for peer in range(world)]
        assert results["broadcast_object_list"]["values"] == [{"from": world - 1}, 3 * (world - 1)]
        assert results["gather_object"]["values"] == ([7 * peer for peer in range(world)] if rank == 0 else None)


@pytest.mark.slow
def test_a_call_gloo_refuses_names_the_standin_the_call_and_the_fix(run):
    _, ranks = run
    for results in ranks:
        message = results["refused_call_error"]["values"]
        assert message.startswith("torch.distributed.all_gather_into_tensor failed on smtrain's CPU stand-in")
        assert "ProcessGroupGloo::allgather: invalid tensor size" in message
        assert "To fix: run this step on the GPU instance (smtrain submit)" in message


def _bfloat16_results(standin, python: str) -> list[dict]:
    """Each of two ranks' results of scripts/bfloat16_collectives.py under `python` (each started by hand: torch
    1.13's torchrun cannot start on Python 3.11)."""
    if subprocess.run([python, "-c", "import torch"], capture_output=True, check=False).returncode:
        pytest.skip(f"{python} has no torch (Debian: apt-get install python3-torch)")
    env = standin.environment(num_gpus=2, WORLD_SIZE="2")
    ranks = [standin.start([python, str(standin.scripts / "bfloat16_collectives.py")], {**env, "RANK": str(rank)})
             for rank in range(2)]
    return [standin.json_lines(done.stdout)[-1] for done in standin.finish_all(ranks)]


def _bfloat16_input(rank: int) -> torch.Tensor:
    return (torch.tensor([1.0, 0.1, 3.14159, -2.5, 1e-3, 300.7]) * (rank + 1)).to(torch.bfloat16)


@pytest.mark.slow
def test_bfloat16_collectives_on_an_nccl_group_run_under_torch_1_13(standin):
    """NCCL reduces bfloat16; Debian's torch 1.13 gloo refused it ("Invalid scalar type"), so DDP's
    bf16_compress_hook and any bfloat16 all_reduce failed there. On an NCCL group they now give NCCL's (and torch 2's
    gloo's) answer: for two ranks, each sum rounded to bfloat16 once. A group asked for gloo keeps gloo's refusal."""
    first, second = _bfloat16_input(0), _bfloat16_input(1)
    summed = (first.float() + second.float()).to(torch.bfloat16).float().tolist()
    halves = [half.float().to(torch.bfloat16).div_(2).float() for half in (first, second)]  # the hook's compression
    hook_mean = (halves[0] + halves[1]).to(torch.bfloat16).float().tolist()
    for results in _bfloat16_results(standin, OLDER_PYTHON):
        assert results["all_reduce"] == results["all_reduce_async_future"] == summed
        assert results["future_gives_the_tensor_passed"] is True  # DDP's hook reads value()[0]
        assert results["all_reduce_max"] == torch.maximum(first, second).float().tolist()
        assert results["all_gather"] == torch.cat([first, second]).float().tolist()
        assert results["broadcast"] == second.float().tolist()
        assert results["ddp_bf16_hook_weight_grad"] == hook_mean * 2  # both rows of the weight see the input
        assert results["gloo_group"] == "Invalid scalar type"


@pytest.mark.slow
def test_bfloat16_collectives_under_torch_1_13_match_torch_2_gloo(standin):
    """The same script under this venv's torch, whose gloo reduces bfloat16 itself, gives the same results."""
    older, newer = _bfloat16_results(standin, OLDER_PYTHON), _bfloat16_results(standin, sys.executable)
    for old, new in zip(older, newer, strict=True):
        assert (old.pop("gloo_group"), new.pop("gloo_group")) == ("Invalid scalar type", "reduced")
        assert old == new


def _reduce_scatter_results(standin, python: str, world: int) -> list[dict]:
    """Each rank's results of scripts/reduce_scatter_collectives.py under `python`, every rank started by hand."""
    if subprocess.run([python, "-c", "import torch"], capture_output=True, check=False).returncode:
        pytest.skip(f"{python} has no torch (Debian: apt-get install python3-torch)")
    env = standin.environment(num_gpus=world, WORLD_SIZE=str(world))
    ranks = [standin.start([python, str(standin.scripts / "reduce_scatter_collectives.py")],
                           {**env, "RANK": str(rank)}) for rank in range(world)]
    return [standin.json_lines(done.stdout)[-1] for done in standin.finish_all(ranks)]


def _reduce_scatter_input(rank: int, world: int) -> torch.Tensor:
    return torch.arange(world * 6, dtype=torch.float64).reshape(world * 2, 3) + rank + 1


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("python", [OLDER_PYTHON, sys.executable], ids=["torch-1.13", "torch-2"])
def test_reduce_scatters_and_all_gather_into_tensor_keep_nccls_contract(standin, python, world):
    """NCCL: rank r receives chunk r of the element-wise reduction of every rank's input, by every op, in the tensor,
    list and _reduce_scatter_base forms, synchronous or async, and the input is left as it was; FSDP v1 gathers its
    flat parameter with all_gather_into_tensor; all_reduce averages in place. Debian's torch 1.13 gloo has none of
    these ("does not support reduce_scatter"), and no ReduceOp.AVG; a group asked for gloo keeps gloo's refusal."""
    inputs = torch.stack([_reduce_scatter_input(rank, world) for rank in range(world)])
    expected = {"sum": inputs.sum(0), "avg": inputs.mean(0), "product": inputs.prod(0), "min": inputs.amin(0),
                "max": inputs.amax(0), "premul_sum": inputs.sum(0) * 0.5}
    expected |= {"sum_bfloat16": expected["sum"], "sum_async": expected["sum"], "list_sum": expected["sum"],
                 "list_avg_async": expected["avg"], "base_sum": expected["sum"],
                 "base_premul_sum_async": expected["premul_sum"]}
    older = python == OLDER_PYTHON
    for rank, results in enumerate(_reduce_scatter_results(standin, python, world)):
        for case, total in expected.items():
            _assert_result(results[case], total.chunk(world)[rank])
        _assert_result(results["all_reduce_avg"], expected["avg"])
        average = torch.div(inputs.sum(0), world, rounding_mode="trunc")  # NCCL's integer average truncates
        _assert_result(results["all_reduce_avg_int64_async"], average)
        if older:
            _assert_result(results["avg_int64"], average.chunk(world)[rank])
        else:
            assert results["avg_int64"] == "result type Float can't be cast to the desired output type Long"
        _assert_result(results["all_gather_into_tensor"], torch.arange(world).repeat_interleave(6).double())
        refused = "ProcessGroup gloo does not support _reduce_scatter_base" if older else "reduced"
        assert refused in results["gloo_group"]
