"""train.py's options, parsed from argv exactly as the SageMaker toolkit builds it (sorted ``--key value``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from config import HyperparameterError, parse_config
from data import ResumableDistributedSampler
from torch import nn
from torch.utils.data import TensorDataset
from trainers import require_batch_norm_samples


def test_parse_config_reads_toolkit_argv():
    argv = ["--batch-size", "8", "--epochs", "1", "--grad-accum", "2", "--lr", "0.001", "--model", "convnet",
            "--num-stages", "3", "--optimizer", "adam", "--precision", "bf16", "--prefetch", "2",
            "--simulate-step-seconds", "0.25", "--trainer", "gloo", "--zero-stage", "1"]
    config = parse_config(argv, {})
    assert (config.batch_size, config.epochs, config.grad_accum, config.lr, config.model, config.num_stages,
            config.optimizer, config.precision, config.prefetch, config.simulate_step_seconds, config.trainer,
            config.zero_stage) == (8, 1, 2, 0.001, "convnet", 3, "adam", "bf16", 2, 0.25, "gloo", 1)


@pytest.mark.parametrize(
    ("environ", "checkpoint_dir"),
    [({}, "/opt/ml/checkpoints"), ({"SAGEMAKER_BASE_DIR": "/tmp/algo-1"}, "/tmp/algo-1/checkpoints")],
)
def test_checkpoint_dir_defaults_to_the_container_path(environ, checkpoint_dir):
    assert parse_config([], environ).checkpoint_dir == checkpoint_dir


def test_hyperparameters_are_keyed_by_option_name():
    hyperparameters = parse_config(["--mlp-hidden", "16"], {}).hyperparameters()
    assert hyperparameters["mlp-hidden"] == 16
    assert "mlp_hidden" not in hyperparameters


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lrr", "0.1"], "unrecognized arguments: --lrr 0.1"),
        (["--epoch", "3"], "unrecognized arguments: --epoch 3"),  # no abbreviations: a typo must not pass
        (["--verbose", "True"], "unrecognized arguments: --verbose True"),
        (["--lr"], "argument --lr: expected one argument"),  # a null hp vanishes in the toolkit's shell line
        (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
        (["--epochs", "1.5"], "argument --epochs: invalid int value: '1.5'"),
        (["--trainer", "horovod"], "argument --trainer: invalid choice: 'horovod'"),
        (["--simulate-step-seconds", "-1"], "--simulate-step-seconds must be at least 0.0, got -1.0"),
        (["--zero-stage", "4"], "argument --zero-stage: invalid choice: 4 (choose from 0, 1, 2, 3)"),
        (["--prefetch", "-1"], "--prefetch must be at least 0, got -1"),
    ],
)
def test_parse_config_rejects_bad_hyperparameters(argv, message):
    with pytest.raises(HyperparameterError) as raised:
        parse_config(argv, {})
    assert message in str(raised.value)


def test_unknown_option_error_lists_the_valid_ones():
    with pytest.raises(HyperparameterError, match="train.py takes --trainer, --model, --mlp-hidden"):
        parse_config(["--modle", "mlp"], {})


def _batch_norm_check(model, batch_pieces, num_samples, batch_size, world_size=1):
    sampler = ResumableDistributedSampler(TensorDataset(torch.zeros(num_samples)), world_size, 0, seed=0)
    config = parse_config(["--model", "resnet50", "--batch-size", str(batch_size)], {})
    require_batch_norm_samples(SimpleNamespace(module=model, batch_pieces=batch_pieces), sampler, config)


@pytest.mark.parametrize(("pieces", "num_samples", "batch_size", "world_size", "message"), [
    (1, 9, 4, 1, "each rank's 9 of the 9 samples, in batches of 4 leave a batch of 1 sample. To fix: set "
                 "--batch-size 5."),
    (3, 14, 7, 1, "each rank's 14 of the 14 samples, in batches of 7, each cut into 3 pieces, leave a piece of 1 "
                  "sample. To fix: set --batch-size 8."),
    (1, 17, 8, 2, "each rank's 9 of the 17 samples, in batches of 8 leave a batch of 1 sample. To fix: set "
                  "--batch-size 9."),
    (2, 3, 4, 2, "each rank's 2 of the 3 samples, in batches of 4, each cut into 2 pieces, leave a piece of 1 "
                 "sample. To fix: train on 8 samples or more (--num-samples, for synthetic data)."),
])
def test_batch_norm_refuses_a_batch_or_piece_of_one_sample(pieces, num_samples, batch_size, world_size, message):
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    with pytest.raises(HyperparameterError) as refused:
        _batch_norm_check(model, pieces, num_samples, batch_size, world_size)
    assert str(refused.value) == ("model resnet50 has batch norm, which trains on 2 samples or more at once; "
                                  + message)
    # Taking the fix's batch size passes, and a model without batch norm trains on single samples.
    suggested = message.rsplit("--batch-size ", 1)[-1].rstrip(".")
    if suggested.isdigit():
        _batch_norm_check(model, pieces, num_samples, int(suggested), world_size)
    _batch_norm_check(nn.Sequential(nn.Linear(3, 3)), pieces, num_samples, batch_size, world_size)
