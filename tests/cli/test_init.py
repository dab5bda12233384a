"""`smtrain init`: a new user's first command writes a spec for their own script that `validate` passes as written,
that `smtrain local` runs, that never replaces a file unasked, and that costs no heavy import."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.loader import load
from orchestrator.specs.metric_regex import compile_metric_regex

REPO = Path(__file__).resolve().parents[2]

SIMPLE = '''\
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--learning-rate", type=float, default=1e-05)
parser.add_argument("--optimizer", default="yes")
parser.add_argument("--verbose", action="store_true")
args = parser.parse_args()

for epoch in range(args.epochs):
    print(f"epoch={epoch + 1} loss={1.0 / (epoch + 1):.3f}")
with open(os.path.join(os.environ["SM_MODEL_DIR"], "model.txt"), "w") as model:
    model.write(f"{args.learning_rate} {args.optimizer}")
'''

TORCHRUN = '''\
import os
import torch.distributed as dist

if __name__ == "__main__":
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    data = os.environ["SM_CHANNEL_TRAINING"], os.environ.get("SM_CHANNEL_VALIDATION")
'''


def _project(tmp_path: Path, script: str, name: str = "train.py") -> Path:
    source = tmp_path / "src"
    source.mkdir(parents=True)
    (source / name).write_text(script)
    return source


def _init(tmp_path: Path, *args: str):
    return CliRunner().invoke(main, ["init", *args], catch_exceptions=False, env={"SMTRAIN_ROLE": None})


def test_the_spec_written_for_a_simple_script_passes_validate_and_holds_what_the_script_reads(tmp_path,
                                                                                            monkeypatch):
    _project(tmp_path, SIMPLE)
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / "job.yaml").read_text())
    assert written["entry_point"] == "train.py" and written["source_dir"] == "src"
    assert written["distribution"] == {"mode": "none"} and written["instance"] == {"type": "ml.c5.2xlarge",
                                                                                   "count": 1}
    # as SageMaker passes them back: `--learning-rate 1e-05` (a number), `--optimizer yes` (text, not a boolean)
    assert written["hyperparameters"] == {"epochs": 2, "learning-rate": 1e-05, "optimizer": "yes"}
    assert [metric["name"] for metric in written["metrics"]] == ["train:epoch", "train:loss"]
    assert "role" not in written and "output_path" not in written
    assert "# role: arn:aws:iam::<account>:role/" in (tmp_path / "job.yaml").read_text()
    assert "--verbose left out: a flag (store_true) takes no value" in (tmp_path / "job.yaml").read_text()
    validated = CliRunner().invoke(main, ["validate", "job.yaml"])
    assert validated.exit_code == 0, validated.output
    assert "next:\n  smtrain validate job.yaml\n  smtrain local job.yaml\n" in result.output
    assert "smtrain submit job.yaml" in result.output
    named = _init(tmp_path, "src/train.py", "--spec-file", "named.yaml")  # the script itself, as a user may name it
    assert named.exit_code == 0, named.output
    assert yaml.safe_load((tmp_path / "named.yaml").read_text())["source_dir"] == "src"


def test_smtrain_local_runs_the_spec_as_written(tmp_path, monkeypatch):
    _project(tmp_path, SIMPLE)
    monkeypatch.chdir(tmp_path)
    assert _init(tmp_path, "src").exit_code == 0

    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", "job.yaml"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                                      "PYTHONPATH": str(REPO)})

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "final train:loss = 0.5" in done.stdout + done.stderr


def test_a_torchrun_script_gets_torch_distributed_on_gpus_and_its_channels_with_local_folders(tmp_path,
                                                                                          monkeypatch):
    project = tmp_path / "cifar_resnet"
    _project(project, TORCHRUN, name="launch.py")
    monkeypatch.chdir(project)

    result = _init(project, "src", "--spec-file", "torchrun.yaml")

    assert result.exit_code == 0, result.output
    loaded = load(project / "torchrun.yaml")
    assert loaded.spec.name == "cifar-resnet"  # the project's name, not its src/
    assert loaded.spec.entry_point == "launch.py"  # the one script with `if __name__ == "__main__":`
    assert loaded.spec.distribution.mode.value == "torch_distributed"
    assert loaded.spec.instance.type == "ml.g5.12xlarge"
    assert {name: channel.uri for name, channel in loaded.spec.inputs.items()} == {
        "training": "s3://your-bucket/cifar-resnet/training/",
        "validation": "s3://your-bucket/cifar-resnet/validation/"}
    assert loaded.spec.local_inputs == {"training": str(project / "data" / "training"),
                                        "validation": str(project / "data" / "validation")}
    assert (project / "data" / "training").is_dir()
    assert "created data/training/ (empty)" in result.output


MNIST = """\
import torch

def train(model, loader, epoch):
    for batch_idx, (data, target) in enumerate(loader):
        print("Train Epoch: {} [{}/{} ({:.0f}%)]\\tLoss: {:.6f}".format(
            epoch, batch_idx * len(data), len(loader.sampler), 100.0 * batch_idx / len(loader), loss.item()))

def test(model, test_loader):
    print("Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\\n".format(
        test_loss, correct, len(test_loader.dataset), 100.0 * correct / len(test_loader.dataset)))
"""
"""The SageMaker PyTorch MNIST example's printing: the test set's loss and accuracy are validation metrics."""


def test_the_mnist_example_gets_validation_metrics_that_validate_and_read_the_test_line(tmp_path, monkeypatch):
    _project(tmp_path, MNIST)
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    metrics = {metric.name: metric.regex for metric in load(tmp_path / "job.yaml").spec.metrics}
    assert list(metrics) == ["train:Epoch", "train:Loss", "validation:loss", "validation:Accuracy"]
    test_line = "Test set: Average loss: 0.0523, Accuracy: 9838/10000 (98%)"
    assert {name: found.group(1) for name, regex in metrics.items()
            if (found := compile_metric_regex(regex).search(test_line))} == {"validation:loss": "0.0523",
                                                                              "validation:Accuracy": "98"}
    assert CliRunner().invoke(main, ["validate", "job.yaml"]).exit_code == 0


def test_an_existing_file_is_kept_unless_forced(tmp_path, monkeypatch):
    _project(tmp_path, SIMPLE)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text("mine\n")

    refused = _init(tmp_path, "src")

    assert refused.exit_code == 2
    assert "job.yaml exists" in refused.stderr and "--force" in refused.stderr
    assert (tmp_path / "job.yaml").read_text() == "mine\n"
    forced = _init(tmp_path, "src", "--force")
    assert forced.exit_code == 0, forced.output
    assert "entry_point: train.py" in (tmp_path / "job.yaml").read_text()


def test_overrides_are_written_and_a_combination_validate_refuses_writes_nothing(tmp_path, monkeypatch):
    _project(tmp_path, TORCHRUN)
    monkeypatch.chdir(tmp_path)

    overridden = _init(tmp_path, "src", "--mode", "mpi", "--instance-type", "ml.c5.4xlarge")
    assert overridden.exit_code == 0, overridden.output
    spec = load(tmp_path / "job.yaml").spec
    assert (spec.distribution.mode.value, spec.instance.type) == ("mpi", "ml.c5.4xlarge")

    refused = _init(tmp_path, "src", "--spec-file", "cpu.yaml", "--mode", "torch_distributed",
                    "--instance-type", "ml.c5.4xlarge")
    assert refused.exit_code == 2
    assert "would not pass `smtrain validate`, so nothing was written" in refused.stderr
    assert "cpu.yaml" in refused.stderr and ".smtrain-init" not in refused.stderr
    assert "Traceback" not in refused.output
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data", "job.yaml", "src"]


def test_init_imports_no_sdk_boto3_torch_or_emulator(tmp_path):
    _project(tmp_path, TORCHRUN)
    script = ("import sys\nfrom orchestrator.cli.main import main\n"
              "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
              "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, "init", "src"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})

    modules = set(done.stderr.split())
    assert "orchestrator.planning.starting_spec" in modules and (tmp_path / "job.yaml").is_file(), done.stdout
    heavy = sorted(module for module in modules if module.split(".")[0] in {"sagemaker", "boto3", "botocore", "torch"}
                   or module.startswith(("orchestrator.emulator", "orchestrator.cloud", "orchestrator.backends")))
    assert not heavy, heavy


def test_no_script_to_find_says_how_to_name_it(tmp_path, monkeypatch):
    source = tmp_path / "src"
    source.mkdir()
    (source / "model.py").write_text(textwrap.dedent("class Net: pass\n"))
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 2
    assert "holds no training script" in result.stderr and "--entry-point PATH" in result.stderr
    assert "model.py" in result.stderr and not (tmp_path / "job.yaml").exists()


def test_options_sagemaker_would_refuse_or_that_would_inject_yaml_are_left_out_as_comments(tmp_path, monkeypatch):
    hostile = textwrap.dedent('''\
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--a=b", default=1)
        parser.add_argument("--prompt", default="x" * 3000)
        parser.add_argument("--long", default="''' + "y" * 3000 + '''")
        parser.add_argument("--evil\\nrole: arn:aws:iam::1:role/x", action="store_true")
        parser.add_argument("--ok", default="\\\\n_fine")
        ''')
    _project(tmp_path, hostile)
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / "job.yaml").read_text())
    assert written["hyperparameters"] == {"ok": "\\n_fine"} and "role" not in written
    text = (tmp_path / "job.yaml").read_text()
    assert "# --a=b left out: hyperparameter name 'a=b' holds '='" in text
    assert "# --long left out: the value is 3002 characters once JSON-encoded" in text
    assert "# --prompt left out: its default is computed, not written" in text
    assert "# --evil\\nrole: arn:aws:iam::1:role/x left out" in text
    # the summary says what the spec says: the model's refusals are left out, not listed as written
    assert "hyperparameters: ok (argparse defaults)" in result.output
    assert "left out: --a=b: hyperparameter name 'a=b' holds '='" in result.output
    assert "left out: --long: the value is 3002 characters once JSON-encoded" in result.output


def _validated(spec_file: str) -> None:
    validated = CliRunner().invoke(main, ["validate", spec_file])
    assert validated.exit_code == 0, validated.output


def test_init_in_the_source_folder_keeps_the_local_data_out_of_the_package(tmp_path, monkeypatch):
    from orchestrator.planning.packaging import package

    project = tmp_path / "mnist"
    project.mkdir()
    (project / "train.py").write_text('import os\ndata = os.getenv("SM_CHANNEL_TRAIN", "/data")\n')
    (project / ".smtrainignore").write_text("notes/")  # the user's own line, no newline at its end
    monkeypatch.chdir(project)

    refused = _init(project, ".", "--mode", "torch_distributed", "--instance-type", "ml.c5.4xlarge")
    assert refused.exit_code == 2 and (project / ".smtrainignore").read_text() == "notes/"  # as it was
    result = _init(project, ".")

    assert result.exit_code == 0, result.output
    _validated("job.yaml")
    assert load(project / "job.yaml").spec.local_inputs == {"train": str(project / "data" / "train")}
    (project / "data" / "train" / "sample.csv").write_text("x\n" * 1000)
    assert package(project).files == ("job.yaml", "train.py")  # the sample is not uploaded
    assert (project / ".smtrainignore").read_text().startswith("notes/\n# smtrain init:")
    assert "added /data/train/ to .smtrainignore" in result.output
    again = _init(project, ".", "--spec-file", "again.yaml")  # already left out: not added twice
    assert again.exit_code == 0 and "added" not in again.output
    assert (project / ".smtrainignore").read_text().count("/data/train/") == 1


def test_init_dot_finds_the_train_py_of_a_subfolder(tmp_path, monkeypatch):
    _project(tmp_path, SIMPLE)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "download.py").write_text('if __name__ == "__main__":\n    print("fetching")\n')
    (tmp_path / "requirements.txt").write_text("numpy\n")
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, ".")

    assert result.exit_code == 0, result.output
    spec = load(tmp_path / "job.yaml").spec
    assert (spec.entry_point, spec.source_dir) == ("src/train.py", str(tmp_path))
    assert "requirements.txt: installed before the script starts" in result.output
    _validated("job.yaml")


@pytest.mark.parametrize("mode", ["pytorchddp", "smddp"])
def test_the_smddp_modes_get_the_newest_image_their_rules_accept_and_say_aws_no_longer_patches_it(
        tmp_path, monkeypatch, mode):
    from orchestrator.specs.images import versions

    _project(tmp_path, TORCHRUN)
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src", "--mode", mode)

    assert result.exit_code == 0, result.output
    _validated("job.yaml")
    newest_with_smddp = [version for version, image in versions().items() if image.smddp and image.toolkit][-1]
    assert load(tmp_path / "job.yaml").spec.framework_version == newest_with_smddp
    version_line = next(line for line in (tmp_path / "job.yaml").read_text().splitlines()
                        if line.startswith("framework_version:"))
    assert "AWS no longer patches it" in version_line and "the newest PyTorch image AWS patches" not in version_line
    on_p5 = _init(tmp_path, "src", "--mode", mode, "--instance-type", "ml.p5.48xlarge", "--spec-file", "p5.yaml")
    assert on_p5.exit_code == 2 and "SMDDP does not support p5" in on_p5.stderr
    assert "1 problem in the job spec" in on_p5.stderr  # the instance's, not an image the mode never runs on


def test_what_would_stop_the_script_at_its_start_is_said_and_no_wrong_hyperparameter_is_written(tmp_path,
                                                                                               monkeypatch):
    notebook = textwrap.dedent('''\
        # In[1]:
        import argparse, os

        !pip install -q transformers
        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, default=3)
        parser.add_argument("--shuffle", default=True)
        parser.add_argument("--fp16", type=bool, default=False)
        parser.add_argument("--model-name", required=True)
        parser.add_argument("data_dir")
        model = torch.nn.Linear(2, 2).cuda()
        ''')
    _project(tmp_path, notebook)
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    _validated("job.yaml")
    spec = load(tmp_path / "job.yaml").spec
    # `--shuffle False` and `--fp16 False` would both reach the script as true values
    assert spec.hyperparameters == {"epochs": 3}
    assert "WARNING: train.py holds notebook lines" in result.output and "line 4" in result.output
    assert "requirements.txt" in result.output
    assert "left out: --fp16: SageMaker would pass it as the text False" in result.output
    assert "left out: --model-name: REQUIRED" in result.output
    assert "WARNING: train.py requires the positional argument(s) data_dir" not in result.output  # not parsed
    # once the notebook line is gone, the positional argument is found too
    (tmp_path / "src" / "train.py").write_text(notebook.replace("!pip install -q transformers", ""))
    parsed = _init(tmp_path, "src", "--force")
    assert "WARNING: train.py requires the positional argument(s) data_dir" in parsed.output
    assert load(tmp_path / "job.yaml").spec.instance.type == "ml.g5.xlarge"


def test_a_lightning_cli_or_hugging_face_script_is_told_what_init_cannot_write(tmp_path, monkeypatch):
    lightning = ("from lightning.pytorch.cli import LightningCLI\n"
                 "if __name__ == '__main__':\n    LightningCLI(Model, Data)\n")
    hugging_face = ("from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
                    "args, = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
                    "Trainer(model=model, args=args).train()\n")
    _project(tmp_path, lightning)
    (tmp_path / "src" / "hf.py").write_text(hugging_face)
    monkeypatch.chdir(tmp_path)

    lightning_result = _init(tmp_path, "src")
    hf_result = _init(tmp_path, "src", "--entry-point", "hf.py", "--spec-file", "hf.yaml")

    assert lightning_result.exit_code == 0 and hf_result.exit_code == 0, lightning_result.output + hf_result.output
    assert "starts LightningCLI, which expects a subcommand (`fit`)" in lightning_result.output
    assert "run=False" in lightning_result.output
    assert "HfArgumentParser's dataclass fields are not read, so none was written" in hf_result.output
    for written in ("job.yaml", "hf.yaml"):  # their trainers take their ranks from torchrun, one per GPU
        _validated(written)
        assert load(tmp_path / written).spec.instance.type == "ml.g5.12xlarge"
        assert load(tmp_path / written).spec.distribution.mode.value == "torch_distributed"
        assert "hyperparameters" not in yaml.safe_load((tmp_path / written).read_text())


HF_TRAINER = '''\
import argparse

from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--deepspeed", type=str, default=None)
args, _ = parser.parse_known_args()
training_args = TrainingArguments(output_dir="/opt/ml/model", num_train_epochs=args.epochs, report_to="none",
                                  eval_strategy="epoch", logging_strategy="epoch", deepspeed=args.deepspeed)
model = AutoModelForSequenceClassification.from_pretrained("/opt/ml/input/data/model")
Trainer(model=model, args=training_args).train()
'''
LIGHTNING = '''\
import lightning as L

trainer = L.Trainer(accelerator="gpu", strategy="ddp", devices="auto", max_epochs=3)
trainer.fit(model)
'''


def _written_per_gpu(tmp_path: Path, trainer: str) -> tuple[str, dict[str, re.Pattern[str]]]:
    """`smtrain init src` for a script built on `trainer`: the spec it writes launches one process per GPU of a
    4-GPU instance under torchrun, says why in a comment, and passes validate. Returns init's output and the
    spec's metric regexes by name, compiled as SageMaker reads them."""
    result = _init(tmp_path, "src")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "job.yaml").read_text()
    written = yaml.safe_load(text)
    assert written["distribution"] == {"mode": "torch_distributed"} and written["instance"]["type"] == "ml.g5.12xlarge"
    assert f"# {trainer}: one process per GPU under torchrun" in text
    _validated("job.yaml")
    return result.output, {metric["name"]: compile_metric_regex(metric["regex"]) for metric in written["metrics"]}


def test_a_transformers_trainer_script_is_launched_per_gpu_with_its_log_dicts_as_metrics(tmp_path, monkeypatch):
    _project(tmp_path, HF_TRAINER)
    monkeypatch.chdir(tmp_path)

    output, metrics = _written_per_gpu(tmp_path, "transformers Trainer")

    assert "distribution: mode torch_distributed (transformers Trainer: one process per GPU under torchrun)" in output
    assert list(metrics) == ["train:loss", "train:grad_norm", "train:learning_rate", "train:epoch", "validation:loss"]
    train_line = "{'loss': '0.6931', 'grad_norm': '1.25', 'learning_rate': '5e-05', 'epoch': '1'}"
    eval_line = "{'eval_loss': '0.6102', 'eval_runtime': '0.21', 'epoch': '1'}"
    assert metrics["train:loss"].search(train_line).group(1) == "0.6931" and not metrics["train:loss"].search(eval_line)
    assert not metrics["train:epoch"].search(eval_line)
    assert metrics["validation:loss"].search(eval_line).group(1) == "0.6102"
    # the image has no transformers and there is no requirements.txt: the user is told at the import's line
    assert ("WARNING: train.py:3 uses transformers, which the PyTorch 2.13.0 image does not ship, and there is no "
            "requirements.txt: create one at the top of src holding `transformers`") in output


def test_a_framework_named_in_requirements_is_not_asked_for_and_a_deepspeed_config_must_ship(tmp_path, monkeypatch):
    source = _project(tmp_path, HF_TRAINER.replace("default=None", 'default="ds_config.json"'))
    (source / "requirements.txt").write_text("transformers==5.24.0\n")
    monkeypatch.chdir(tmp_path)

    missing = _init(tmp_path, "src")

    assert missing.exit_code == 0, missing.output
    assert "uses transformers" not in missing.output
    assert ("WARNING: train.py:7 uses deepspeed, which the PyTorch 2.13.0 image does not ship, and requirements.txt "
            "does not name it: add a line `deepspeed` to it") in missing.output
    assert "WARNING: train.py names the DeepSpeed config ds_config.json, which is not in src" in missing.output
    assert "DeepSpeed through the transformers Trainer: one process per GPU under torchrun" in missing.output

    (source / "ds_config.json").write_text('{"zero_optimization": {"stage": 2}}')
    (source / "requirements.txt").write_text("transformers==5.24.0\ndeepspeed\n")
    shipped = _init(tmp_path, "src", "--force")

    assert shipped.exit_code == 0, shipped.output
    assert "WARNING" not in shipped.output
    assert "DeepSpeed config: ds_config.json, shipped with the code" in shipped.output


def test_a_lightning_script_that_ranks_by_host_count_is_still_launched_per_gpu(tmp_path, monkeypatch):
    _project(tmp_path, 'import json, os\n' + LIGHTNING.replace("max_epochs=3",
                                                                'num_nodes=len(json.loads(os.environ["SM_HOSTS"]))'))
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    text = (tmp_path / "job.yaml").read_text()
    assert yaml.safe_load(text)["distribution"] == {"mode": "torch_distributed"}
    assert "# Lightning Trainer: one process per GPU under torchrun" in text
    assert "WARNING: train.py:2 uses lightning" in result.output and "holding `lightning`" in result.output


@pytest.mark.parametrize(("trainer_call", "instance_type", "count"), [
    ('L.Trainer(accelerator="gpu", devices=1, max_epochs=3)', "ml.g5.xlarge", 1),
    ("L.Trainer(devices=8, num_nodes=2)", "ml.g5.48xlarge", 2),
])
def test_a_lightning_script_asking_for_n_devices_gets_an_instance_that_starts_n_processes(tmp_path, monkeypatch,
                                                                                           trainer_call, instance_type,
                                                                                           count):
    """torchrun starts one process per GPU of the instance: Lightning's devices=1 on a 4-GPU instance stops with its
    world size mismatch, so the instance is the one with the GPUs the script asks for."""
    _project(tmp_path, f"import lightning as L\n\ntrainer = {trainer_call}\ntrainer.fit(model)\n")
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / "job.yaml").read_text())
    assert written["distribution"] == {"mode": "torch_distributed"}
    assert written["instance"] == {"type": instance_type, "count": count}
    assert "WARNING: Lightning's" not in result.output
    validated = CliRunner().invoke(main, ["validate", "job.yaml"])
    assert validated.exit_code == 0, validated.output


@pytest.mark.parametrize("script", [
    'import lightning as L\n\nL.Trainer(accelerator="cpu", devices=2, max_epochs=3).fit(model)\n',
    "import pytorch_lightning as pl\n\ntrainer = pl.Trainer(accelerator='CPU')\ntrainer.fit(model)\n",
])
def test_a_lightning_script_on_cpu_gets_a_cpu_instance_started_once_per_host(tmp_path, monkeypatch, script):
    """Before, accelerator="cpu" got ml.g5.12xlarge under torchrun: four GPUs paid for and idle, and its devices=2
    warned of a world size mismatch that a CPU run never has (Lightning starts its own processes)."""
    _project(tmp_path, script)
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    text = (tmp_path / "job.yaml").read_text()
    written = yaml.safe_load(text)
    assert written["instance"] == {"type": "ml.c5.2xlarge", "count": 1} and written["distribution"] == {"mode": "none"}
    assert ('# a CPU host: Lightning\'s Trainer(accelerator="cpu") trains on CPUs, where a GPU would sit idle'
            in text)
    assert "# Lightning's Trainer(accelerator=\"cpu\"): once per host, Lightning starting its devices' processes " \
           "itself (torchrun's mode runs on GPUs only)" in text
    assert "WARNING: Lightning's" not in result.output
    _validated("job.yaml")


def test_a_lightning_script_on_cpu_over_several_hosts_is_told_to_give_each_its_place(tmp_path, monkeypatch):
    """Mode none sets no MASTER_ADDR or NODE_RANK: each host's Lightning takes itself for node 0 and waits."""
    _project(tmp_path, 'import lightning as L\n\nL.Trainer(accelerator="cpu", num_nodes=2).fit(model)\n')
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    assert yaml.safe_load((tmp_path / "job.yaml").read_text())["instance"] == {"type": "ml.c5.2xlarge", "count": 2}
    assert ('WARNING: Lightning\'s Trainer(accelerator="cpu") with num_nodes=2 joins its hosts through MASTER_ADDR '
            "and NODE_RANK, which mode none does not set") in result.output
    assert "NODE_RANK: the index of SM_CURRENT_HOST" in result.output


def test_lightning_devices_no_instance_or_the_chosen_one_starts_are_said_with_the_fix(tmp_path, monkeypatch):
    source = _project(tmp_path, "import lightning as L\n\nL.Trainer(devices=2).fit(model)\n")
    monkeypatch.chdir(tmp_path)

    two = _init(tmp_path, "src")

    assert two.exit_code == 0, two.output
    assert ("WARNING: Lightning's Trainer(devices=2) expects 2 processes per host, and torchrun starts 4 on "
            "ml.g5.12xlarge (one per GPU): Lightning stops at its start") in two.output
    assert 'Write devices="auto" (one per GPU); no g5 instance has 2 GPUs' in two.output

    (source / "train.py").write_text("import lightning as L\n\nL.Trainer(devices=1).fit(model)\n")
    chosen = _init(tmp_path, "src", "--instance-type", "ml.g5.12xlarge", "--force")

    assert chosen.exit_code == 0, chosen.output
    assert "torchrun starts 4 on ml.g5.12xlarge" in chosen.output
    assert "or run it on ml.g5.xlarge (--instance-type ml.g5.xlarge)" in chosen.output


TRL_SFT = '''\
from trl import SFTConfig, SFTTrainer

from metrics import compute_metrics

trainer = SFTTrainer(model="/opt/ml/input/data/model", args=SFTConfig(output_dir="/opt/ml/model"),
                     compute_metrics=compute_metrics)
trainer.train()
'''


def test_a_trl_script_with_compute_metrics_in_its_own_module_gets_torchrun_and_its_evaluation_metrics(tmp_path,
                                                                                                   monkeypatch):
    source = _project(tmp_path, TRL_SFT)
    (source / "metrics.py").write_text("def compute_metrics(eval_pred):\n"
                                       "    return {'accuracy': accuracy(eval_pred), 'f1': f1(eval_pred)}\n")
    monkeypatch.chdir(tmp_path)

    output, metrics = _written_per_gpu(tmp_path, "TRL SFTTrainer")

    assert "WARNING: train.py:1 uses trl, which the PyTorch 2.13.0 image does not ship" in output
    assert "read with it: metrics.py" in output
    evaluation = "[1,mpirank:0,algo-1]<stdout>:{'eval_loss': '0.61', 'eval_accuracy': '0.75', 'eval_f1': '0.7'}"
    assert metrics["validation:accuracy"].search(evaluation).group(1) == "0.75"
    assert metrics["validation:f1"].search(evaluation).group(1) == "0.7"
    assert not metrics["validation:accuracy"].search("{'loss': 0.52, 'epoch': 1.0}")


def test_a_dpo_script_gets_the_rewards_trl_logs_as_metrics_beside_the_trainers(tmp_path, monkeypatch):
    _project(tmp_path, TRL_SFT.replace("SFT", "DPO").replace("compute_metrics=compute_metrics", "beta=0.1"))
    monkeypatch.chdir(tmp_path)

    output, metrics = _written_per_gpu(tmp_path, "TRL DPOTrainer")

    assert list(metrics)[:5] == ["train:loss", "train:grad_norm", "train:learning_rate", "train:epoch",
                                 "validation:loss"]
    assert {"train:rewards/margins", "validation:rewards/margins", "train:rewards/accuracies"} <= set(metrics)
    train_line = "{'loss': 0.4668, 'rewards/chosen': -0.0648, 'rewards/margins': 1.0109, 'epoch': 0.41}"
    eval_line = "{'eval_loss': 0.2397, 'eval_rewards/margins': 2.5933, 'epoch': 1.0}"
    assert metrics["train:rewards/margins"].search(train_line).group(1) == "1.0109"
    assert metrics["validation:rewards/margins"].search(eval_line).group(1) == "2.5933"
    assert not metrics["train:rewards/margins"].search(eval_line)
    assert "metrics: train:loss, " in output and "train:rewards/margins" in output


def test_a_trainer_built_in_a_module_of_the_source_folder_launches_the_script_per_gpu(tmp_path, monkeypatch):
    source = _project(tmp_path, "from mytrain import build_trainer\n\nbuild_trainer().train()\n")
    (source / "mytrain.py").write_text("import lightning as L\n\ndef build_trainer():\n"
                                       "    return L.Trainer(devices=1)\n")
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / "job.yaml").read_text())
    assert written["distribution"] == {"mode": "torch_distributed"} and written["instance"]["type"] == "ml.g5.xlarge"
    assert "WARNING: mytrain.py:1 uses lightning" in result.output


def test_a_script_split_into_modules_gets_the_channels_launcher_options_and_metrics_its_modules_hold(tmp_path,
                                                                                                   monkeypatch):
    source = _project(tmp_path, "from args import parse_args\nfrom data import loaders\nimport loop\n\n"
                                "args = parse_args()\nfor epoch in range(args.epochs):\n"
                                "    loop.train_epoch(loaders(), args.lr)\n")
    (source / "args.py").write_text("import argparse\n\ndef parse_args():\n    parser = argparse.ArgumentParser()\n"
                                    "    parser.add_argument('--lr', type=float, default=0.1)\n"
                                    "    parser.add_argument('--epochs', type=int, default=3)\n"
                                    "    return parser.parse_args()\n")
    (source / "data.py").write_text("import os\n\ndef loaders():\n    return (os.environ['SM_CHANNEL_TRAIN'], "
                                    "os.environ['SM_CHANNEL_TEST'])\n")
    (source / "loop.py").write_text("import os\n\ndef train_epoch(data, lr):\n"
                                    "    rank = int(os.environ['LOCAL_RANK'])\n    loss = 0.5\n"
                                    "    print(f'loss={loss:.3f}')\n")
    monkeypatch.chdir(tmp_path)

    result = _init(tmp_path, "src")

    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / "job.yaml").read_text())
    assert set(written["inputs"]) == {"train", "test"}
    assert written["distribution"] == {"mode": "torch_distributed"} and written["instance"]["type"] == "ml.g5.12xlarge"
    assert written["hyperparameters"] == {"lr": 0.1, "epochs": 3}
    metrics = {metric["name"]: compile_metric_regex(metric["regex"]) for metric in written["metrics"]}
    assert metrics["train:loss"].search("loss=0.512").group(1) == "0.512"
    assert "read with it: args.py, data.py, loop.py" in result.output
    validated = CliRunner().invoke(main, ["validate", "job.yaml"])
    assert validated.exit_code == 0, validated.output
