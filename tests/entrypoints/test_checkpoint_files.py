"""Checkpoint files: atomic writes, pruning, skipping corrupt or partial files on resume, and fsdp's shards."""

from __future__ import annotations

import checkpoint
import pytest
import torch
from checkpoint import CheckpointDir, CheckpointMismatch
from replicated import Replicated


def _state(step: int) -> dict:
    return {"format": checkpoint.CHECKPOINT_FORMAT, "global_step": step, "model": {"w": torch.full((2,), step)},
            "optimizer": {}, "scaler": {}, "rng": [], "progress": {}, "settings": {}}


def test_save_writes_the_named_file_and_no_temporary(tmp_path):
    directory = CheckpointDir(tmp_path / "ckpt")
    path = directory.save(_state(120))
    assert path.name == "ckpt-000120.pt"
    assert [entry.name for entry in path.parent.iterdir()] == ["ckpt-000120.pt"]
    assert torch.equal(directory.load(120)["model"]["w"], torch.full((2,), 120))


def test_save_keeps_only_the_newest_checkpoints(tmp_path):
    directory = CheckpointDir(tmp_path, keep=3)
    for step in (5, 10, 15, 20, 1000000):
        directory.save(_state(step))
    assert directory.steps() == [1000000, 20, 15]


def test_newest_valid_skips_corrupt_and_partial_files_with_a_warning(tmp_path):
    directory = CheckpointDir(tmp_path)
    directory.save(_state(10))
    complete = directory.path(10).read_bytes()
    directory.path(20).write_bytes(complete[: len(complete) // 2])  # a partial copy
    directory.path(30).write_bytes(b"\x00garbage")
    torch.save(_state(99), directory.path(40))  # a file whose content disagrees with its name
    (tmp_path / ".ckpt-000050.pt.tmp-123").write_bytes(b"half")  # an interrupted write, never a candidate
    warnings: list[str] = []
    step, state = directory.newest_valid(warnings.append)
    assert step == 10 and state["global_step"] == 10
    assert len(warnings) == 3
    for warning, skipped_step in zip(warnings, (40, 30, 20)):
        assert warning.startswith(f"skipping checkpoint: {directory.path(skipped_step)} ")


def test_checkpoint_missing_keys_is_invalid(tmp_path):
    directory = CheckpointDir(tmp_path)
    torch.save({"format": checkpoint.CHECKPOINT_FORMAT, "global_step": 7}, directory.path(7))
    warnings: list[str] = []
    assert directory.newest_valid(warnings.append) is None
    assert "lacks checkpoint keys ['model', 'optimizer'" in warnings[0]


def test_no_directory_means_no_checkpoint(tmp_path):
    assert CheckpointDir(tmp_path / "absent").newest_valid(lambda warning: None) is None


def test_background_save_writes_the_state_as_it_was_when_called(tmp_path):
    directory = CheckpointDir(tmp_path)
    state = _state(3)
    assert directory.save_in_background(state) == tmp_path / "ckpt-000003.pt"
    state["model"]["w"].add_(100)  # training goes on changing the weights
    directory.wait()
    assert torch.equal(directory.load(3)["model"]["w"], torch.full((2,), 3))


def test_background_save_failure_is_raised_by_wait(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    directory = CheckpointDir(blocker / "checkpoints")
    directory.save_in_background(_state(1))
    with pytest.raises(OSError):
        directory.wait()


def test_sharded_checkpoint_is_invalid_without_its_shards_metadata(tmp_path):
    directory = CheckpointDir(tmp_path)
    directory.save({**_state(5), "shards": directory.shards_path(5).name})
    directory.shards_path(5).mkdir()
    (directory.shards_path(5) / "__0_0.distcp").write_bytes(b"shards, but no .metadata: the save was cut short")
    warnings: list[str] = []
    assert directory.newest_valid(warnings.append) is None
    assert f"names shards {directory.shards_path(5)} that are missing or incomplete" in warnings[0]
    (directory.shards_path(5) / checkpoint.DCP_METADATA).write_bytes(b"")
    assert directory.load(5)["shards"] == "ckpt-000005.dcp"


def test_prune_shards_keeps_the_newest_up_to_the_step_and_later_leftovers(tmp_path):
    directory = CheckpointDir(tmp_path, keep=2)
    for step in (5, 10, 15, 20, 99):
        directory.shards_path(step).mkdir()
    directory.prune_shards(20)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ckpt-000015.dcp", "ckpt-000020.dcp",
                                                                "ckpt-000099.dcp"]


def test_replicated_trainer_refuses_a_sharded_checkpoint(tmp_path):
    model = torch.nn.Linear(2, 2)
    cpu = torch.device("cpu")
    layout = Replicated(model, model, torch.optim.SGD(model.parameters(), lr=0.1), (cpu, cpu), None, None, 1)
    with pytest.raises(CheckpointMismatch, match="ckpt-000005.pt is a sharded checkpoint of trainer fsdp"):
        layout.load_checkpoint_state({"global_step": 5, "shards": "ckpt-000005.dcp"}, CheckpointDir(tmp_path))
