"""The failure file: what a failed run leaves for SageMaker's FailureReason, and the exit status."""

from __future__ import annotations

import pytest
import train

# An exception type and message come first: SageMaker shows the first 1024 characters.
FAILURE_PREFIX_LENGTH = 1024


def test_unknown_hyperparameter_writes_the_failure_file_and_exits_2(tmp_path, capsys):
    assert train.main(["--lrr", "0.1"], {"SAGEMAKER_BASE_DIR": str(tmp_path)}) == 2
    reason = (tmp_path / "output" / "failure").read_text()
    assert reason.startswith("HyperparameterError: unrecognized arguments: --lrr 0.1; train.py takes --trainer")
    assert "train.py: error: unrecognized arguments: --lrr 0.1" in capsys.readouterr().err


def test_failure_file_keeps_the_first_writer(tmp_path):
    train.write_failure(tmp_path, ValueError("rank 1 failed first"))
    train.write_failure(tmp_path, RuntimeError("rank 0 failed later"))
    assert (tmp_path / "failure").read_text().startswith("ValueError: rank 1 failed first\n")


def test_unwritable_output_dir_does_not_hide_the_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    train.write_failure(blocker / "output", ValueError("the real error"))
    assert f"could not write {blocker / 'output' / 'failure'}" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize(("trainer", "stage", "message"), [
    ("gloo", "3", "--zero-stage 3 needs trainer fsdp; this run's trainer is gloo (requested). To fix: set --trainer "
                  "fsdp, or --zero-stage 0."),
    ("fsdp", "1", "--zero-stage 1 needs trainer ddp or gloo; this run's trainer is fsdp (requested). To fix: set "
                  "--trainer gloo, or --zero-stage 0."),
])
def test_a_zero_stage_the_trainer_does_not_offer_fails_before_training(launcher, trainer, stage, message):
    """Asking for sharding a trainer cannot give is an error, not a run that silently holds everything."""
    failed = launcher.single(f"zero-{trainer}-{stage}", ["--trainer", trainer, "--zero-stage", stage])
    assert failed.returncode == 2, failed.output
    assert f"train.py: error: {message}" in failed.output
    assert (failed.base_dir / "output" / "failure").read_text().startswith(f"HyperparameterError: {message}")


@pytest.mark.slow
def test_bad_channel_file_fails_the_run_with_its_name_in_the_failure_file(launcher, tmp_path):
    channel = tmp_path / "train"
    channel.mkdir()
    (channel / "bad.csv").write_text("1,2,3,4,5,0\n1,2,three,4,5,1\n")
    failed = launcher.single("bad-channel", ["--model", "linear"], SM_CHANNEL_TRAIN=str(channel))
    assert failed.returncode == 1, failed.output
    reason = (failed.base_dir / "output" / "failure").read_text()
    assert reason[:FAILURE_PREFIX_LENGTH].startswith(
        f"DataError: {channel / 'bad.csv'}: line 2: could not convert string to float: 'three'")
    assert "Traceback" in failed.output


@pytest.mark.slow
def test_a_batch_norm_batch_of_one_sample_fails_before_training_naming_a_batch_size(launcher):
    """ResNet-50's batch norm cannot train on one sample; a shard that leaves one (9 samples in batches of 4)
    would fail at the end of the first epoch with torch's "Expected more than 1 value per channel"."""
    failed = launcher.single("bn-one-sample", ["--model", "resnet50", "--num-samples", "9", "--batch-size", "4"])
    message = ("model resnet50 has batch norm, which trains on 2 samples or more at once; each rank's 9 of the 9 "
               "samples, in batches of 4 leave a batch of 1 sample. To fix: set --batch-size 5.")
    assert failed.returncode == 2, failed.output
    assert f"train.py: error: {message}" in failed.output
    assert "train_loss" not in failed.output  # refused before the first step
    assert (failed.base_dir / "output" / "failure").read_text().startswith(f"HyperparameterError: {message}")
