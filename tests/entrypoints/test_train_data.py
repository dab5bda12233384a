"""Synthetic data, channel files (CSV and .pt) and the resumable sampler."""

from __future__ import annotations

import pytest
import torch
from data import DataError, ResumableDistributedSampler, smallest_piece, synthetic_dataset, training_dataset
from models import TASKS


def _load(environ, model="linear", num_samples=12):
    notices: list[str] = []
    dataset = training_dataset(TASKS[model], num_samples, seed=0, environ=environ, notify=notices.append)
    return dataset, notices


def test_synthetic_dataset_depends_only_on_task_size_and_seed():
    first, second = synthetic_dataset(TASKS["convnet"], 16, seed=3), synthetic_dataset(TASKS["convnet"], 16, seed=3)
    assert torch.equal(first.tensors[0], second.tensors[0]) and torch.equal(first.tensors[1], second.tensors[1])
    assert first.tensors[0].shape == (16, 1, 28, 28)
    assert not torch.equal(first.tensors[0], synthetic_dataset(TASKS["convnet"], 16, seed=4).tensors[0])


def test_channel_csv_and_pt_files_are_concatenated_in_path_order(tmp_path):
    (tmp_path / "a.csv").write_text("f1,f2,f3,f4,f5,label\n" + "1,2,3,4,5,1\n" + "0,0,0,0,0.5,0\n")
    (tmp_path / "b").mkdir()
    torch.save({"x": torch.ones(2, 5), "y": torch.tensor([1, 1])}, tmp_path / "b" / "dict.pt")
    torch.save((torch.zeros(1, 5), torch.tensor([0.0])), tmp_path / "c.pt")
    (tmp_path / "_SUCCESS").write_text("")
    dataset, notices = _load({"SM_CHANNEL_TRAIN": str(tmp_path)})
    features, targets = dataset.tensors
    assert features.shape == (5, 5) and features.dtype == torch.float32
    assert targets.tolist() == [1, 0, 1, 1, 0] and targets.dtype == torch.int64
    assert notices == ["train channel: skipped 1 files that are neither .csv nor .pt"]


def test_regression_targets_are_float_columns(tmp_path):
    (tmp_path / "r.csv").write_text(",".join(["0.5"] * 21) + "\n")
    dataset, _ = _load({"SM_CHANNEL_TRAIN": str(tmp_path)}, model="regression")
    assert dataset.tensors[1].tolist() == [[0.5]]


def test_empty_channel_falls_back_to_synthetic_data_with_a_notice(tmp_path):
    dataset, notices = _load({"SM_CHANNEL_TRAIN": str(tmp_path)}, num_samples=12)
    assert len(dataset) == 12
    assert notices == [f"channel {tmp_path} is empty; using 12 synthetic samples"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.csv", "1,2,3,4,5,0\n1,2,3,4,5,1\n1,2,x,4,5,0\n", "bad.csv: line 3: could not convert string to float"),
        ("narrow.csv", "1,2,3,0\n", "narrow.csv: 3 features per sample, the model takes 5"),
        ("ragged.csv", "1,2,3,4,5,0\n1,2,0\n", "rows must all have the same number of columns"),
        ("label.csv", "1,2,3,4,5,2\n", "class targets must lie in 0..1, found 2..2"),
        ("fraction.csv", "1,2,3,4,5,0.5\n", "class targets must be whole numbers"),
        ("header-only.csv", "a,b\n", "header-only.csv: no data rows"),
        ("notes.txt", "hello", "no .csv or .pt file among the 1 files"),
        ("garbage.pt", "not a pickle", "garbage.pt: cannot be loaded with torch.load"),
    ],
)
def test_malformed_channel_files_are_rejected_naming_the_file(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    with pytest.raises(DataError) as raised:
        _load({"SM_CHANNEL_TRAIN": str(tmp_path)})
    assert message in str(raised.value)


def test_pt_file_with_other_content_is_rejected(tmp_path):
    torch.save({"features": torch.ones(1, 5)}, tmp_path / "wrong.pt")
    with pytest.raises(DataError, match='wrong.pt: expected {"x": tensor, "y": tensor} or a tuple'):
        _load({"SM_CHANNEL_TRAIN": str(tmp_path)})


def test_channel_that_is_not_a_directory_is_an_error(tmp_path):
    with pytest.raises(DataError, match="SM_CHANNEL_TRAIN='.*missing' is not a directory"):
        _load({"SM_CHANNEL_TRAIN": str(tmp_path / "missing")})


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_sampler_started_part_way_yields_the_rest_of_the_epoch(world_size):
    dataset = synthetic_dataset(TASKS["linear"], 30, seed=0)
    for rank in range(world_size):
        sampler = ResumableDistributedSampler(dataset, world_size, rank, seed=7)
        sampler.set_epoch(2)
        whole_epoch = list(sampler)
        sampler.start_index = 4
        assert list(sampler) == whole_epoch[4:]
        assert len(sampler) == len(whole_epoch) - 4


@pytest.mark.parametrize("pieces", [1, 2, 3, 4])
def test_smallest_piece_is_what_the_loader_and_the_split_give(pieces):
    """The sizes the batch-norm check reasons about are those the layers really see: the loader's batches of one
    rank's shard, each cut as ``Tensor.chunk`` (DataParallel's scatter) and ``split`` (the pipeline) cut them."""
    for shard_size in range(1, 30):
        for batch_size in range(1, 12):
            batches = torch.arange(shard_size).split(batch_size)
            seen = [len(piece) for batch in batches for piece in batch.chunk(pieces)]
            assert smallest_piece(shard_size, batch_size, pieces) == min(seen), (shard_size, batch_size)
