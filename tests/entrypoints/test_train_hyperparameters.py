"""train.py's options, parsed from argv exactly as the SageMaker toolkit builds it (sorted ``--key value``)."""

from __future__ import annotations

import pytest
from config import HyperparameterError, parse_config


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
