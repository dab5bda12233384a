"""The training framework a script is built on, read from its text (`smtrain init`): how SageMaker must launch it,
the Trainer's log lines as metrics that read their own lines only, and the packages the image must get."""

from __future__ import annotations

import pytest

from orchestrator.planning.framework_reading import (TRAINER_METRICS, FrameworkImport, read_frameworks,
                                                     unshipped)
from orchestrator.planning.script_reading import read_script
from orchestrator.planning.source_survey import survey_source
from orchestrator.specs.metric_regex import compile_metric_regex

HF_TRAINER = '''\
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

args = TrainingArguments(output_dir="/opt/ml/model", num_train_epochs=3, report_to="none")
Trainer(model=AutoModelForSequenceClassification.from_pretrained("bert-base-uncased"), args=args).train()
'''
ACCELERATE = "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')\n"
LIGHTNING = 'import lightning as L\ntrainer = L.Trainer(strategy="ddp", devices=4)\ntrainer.fit(model)\n'
DEEPSPEED = "import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"


@pytest.mark.parametrize(("script", "launcher"), [
    (HF_TRAINER, "transformers Trainer"),
    (ACCELERATE, "Accelerate"),
    (LIGHTNING, "Lightning Trainer"),
    ("import pytorch_lightning as pl\ntrainer = pl.Trainer(max_epochs=3)\n", "Lightning Trainer"),
    (DEEPSPEED, "DeepSpeed"),
    (HF_TRAINER.replace('report_to="none"', 'deepspeed="ds_config.json"'),
     "DeepSpeed through the transformers Trainer"),
    # a loop of one's own named Trainer, and transformers used for its model only: no framework launches it
    ("class Trainer:\n    pass\ntrainer = Trainer()\n", None),
    ("from transformers import AutoModel\nmodel = AutoModel.from_pretrained('bert-base-uncased')\n", None),
])
def test_the_framework_that_takes_its_ranks_from_torchrun_is_read_from_the_text(script, launcher):
    assert read_frameworks(script).launcher == launcher


def test_a_framework_script_that_reads_no_rank_is_launched_one_process_per_gpu():
    for script in (HF_TRAINER, ACCELERATE, LIGHTNING):
        reading = read_script(script)
        assert not reading.torchrun  # the script itself reads no RANK: only the framework says how it is launched
        assert reading.frameworks.launch_reason.endswith(": one process per GPU under torchrun")


TRAINER_LINES = {
    # transformers 4 prints the numbers, transformers 5 (PrinterCallback, ProgressCallback) as text, 4 digits
    "train": "{'loss': 0.5213, 'grad_norm': 1.734, 'learning_rate': 4e-05, 'epoch': 1.0}",
    "train5": "{'loss': '0.5213', 'grad_norm': '1.734', 'learning_rate': '4e-05', 'epoch': '1'}",
    "eval": "{'eval_loss': 0.6102, 'eval_runtime': 0.21, 'eval_samples_per_second': 76.2, "
            "'eval_steps_per_second': 9.5, 'epoch': 1.0}",
    "eval5": "{'eval_accuracy': '0.75', 'eval_loss': '0.6102', 'eval_runtime': '0.21', 'epoch': '1'}",
    "end": "{'train_runtime': 12.31, 'train_samples_per_second': 124.8, 'train_steps_per_second': 15.6, "
           "'train_loss': 0.5821, 'epoch': 3.0}",
    "mpi": "[1,mpirank:0,algo-1]<stdout>:{'loss': 0.5213, 'grad_norm': 1.734, 'learning_rate': 4e-05, 'epoch': 1.0}",
}


def test_the_trainer_log_dicts_are_metrics_that_read_only_their_own_lines():
    read = {(metric.name, line): (found.group(1) if (found := compile_metric_regex(metric.regex).search(text))
                                  else None)
            for metric in TRAINER_METRICS for line, text in TRAINER_LINES.items()}

    def values(name):
        return {line: read[(name, line)] for line in TRAINER_LINES}

    assert values("train:loss") == {"train": "0.5213", "train5": "0.5213", "eval": None, "eval5": None, "end": None,
                                    "mpi": "0.5213"}
    assert values("train:epoch") == {"train": "1.0", "train5": "1", "eval": None, "eval5": None, "end": None,
                                     "mpi": "1.0"}
    assert values("train:learning_rate")["train5"] == "4e-05" and values("train:grad_norm")["train"] == "1.734"
    assert values("validation:loss") == {"train": None, "train5": None, "eval": "0.6102", "eval5": "0.6102",
                                         "end": None, "mpi": None}
    assert all(float(value) >= 0 for value in read.values() if value is not None)


def test_a_framework_is_missing_where_neither_the_image_nor_requirements_holds_it():
    reading = read_frameworks("import torch\nimport lightning as L\nfrom transformers import Trainer\n"
                              "from accelerate import Accelerator\n")
    assert reading.imports == (FrameworkImport("lightning", 2), FrameworkImport("transformers", 3),
                               FrameworkImport("accelerate", 4))

    # 2.10.0's image ships accelerate, neither lightning nor transformers; requirements.txt names transformers
    assert unshipped(reading.imports, frozenset({"transformers"}), "2.10.0") == (FrameworkImport("lightning", 2),)
    # an image the table does not cover (2.13.0) is taken to hold what every covered one holds
    assert [framework.module for framework in unshipped(reading.imports, frozenset(), "2.13.0")] == [
        "lightning", "transformers"]


def test_requirements_are_read_by_name_whatever_their_spelling(tmp_path):
    (tmp_path / "train.py").write_text("import pytorch_lightning\n")
    (tmp_path / "requirements.txt").write_text(
        "# frameworks\ntransformers[torch]>=4.40  # the Trainer\n-r more/base.txt\n--index-url https://example.com\n"
        "git+https://github.com/huggingface/accelerate.git\ndeepspeed @ https://example.com/deepspeed-0.19.whl\n"
        "-e git+https://github.com/Lightning-AI/pytorch-lightning.git#egg=lightning\n")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "base.txt").write_text("PyTorch_Lightning==2.6.0\n")

    survey = survey_source(tmp_path)

    assert survey.required == {"transformers", "pytorch-lightning", "accelerate", "deepspeed", "lightning"}
    assert unshipped(survey.reading.frameworks.imports, survey.required, "2.10.0") == ()


TRL = '''\
from datasets import load_dataset
from trl import {config}, {trainer}

trainer = {trainer}(model="/opt/ml/input/data/model", args={config}(output_dir="/opt/ml/model"), train_dataset=data)
trainer.train()
'''


@pytest.mark.parametrize(("trainer", "config"), [("SFTTrainer", "SFTConfig"), ("DPOTrainer", "DPOConfig"),
                                                 ("GRPOTrainer", "GRPOConfig")])
def test_trl_trainers_are_transformers_trainers_launched_per_gpu_with_their_log_dicts(trainer, config):
    reading = read_frameworks(TRL.format(trainer=trainer, config=config))

    assert reading.launcher == f"TRL {trainer}"
    assert reading.trainer_logs and reading.metric_definitions[:len(TRAINER_METRICS)] == TRAINER_METRICS
    assert reading.imports == (FrameworkImport("trl", 2),)  # trl is in no image: it must be installed


TRL_LINES = {
    # as TRL's trainers print them through the Trainer (their keys after its own; an evaluation's prefixed eval_)
    "SFTTrainer": ("{'loss': 1.1036, 'grad_norm': 0.8945, 'learning_rate': 1.9986e-05, 'entropy': 1.1158, "
                   "'num_tokens': 3403502.0, 'mean_token_accuracy': 0.6849, 'epoch': 0.27}",
                   "{'eval_loss': '1.02', 'eval_runtime': '4.2', 'eval_entropy': '1.1', "
                   "'eval_mean_token_accuracy': '0.7012', 'epoch': '1'}"),
    "DPOTrainer": ("{'loss': 0.4668, 'grad_norm': 5.192, 'learning_rate': 0.0001938, 'rewards/chosen': -0.0648, "
                   "'rewards/rejected': -1.0757, 'rewards/accuracies': 0.6594, 'rewards/margins': 1.0109, "
                   "'logps/chosen': -21.715, 'logits/chosen': -0.939, 'epoch': 0.41}",
                   "{'eval_loss': '0.2397', 'eval_runtime': '3.1', 'eval_rewards/chosen': '-0.0136', "
                   "'eval_rewards/rejected': '-2.6069', 'eval_rewards/accuracies': '0.8969', "
                   "'eval_rewards/margins': '2.5933', 'epoch': '1'}"),
    "GRPOTrainer": ("{'loss': 0.0329, 'grad_norm': 0.304, 'learning_rate': 4e-05, 'num_tokens': 21444.0, "
                    "'completions/mean_length': 95.85, 'completions/clipped_ratio': 0.125, "
                    "'rewards/reward_fn/mean': 0.7768, 'rewards/reward_fn/std': 0.9959, 'reward': 0.7767, "
                    "'reward_std': 0.7151, 'frac_reward_zero_std': 0.2, 'objective/kl': 9.5, "
                    "'kl': 2.1898e-05, 'epoch': 0.5}",
                    "{'eval_loss': 0.01, 'eval_reward': 0.81, 'eval_reward_std': 0.62, 'eval_kl': 3e-05, "
                    "'eval_completions/mean_length': 90.5, 'epoch': 1.0}"),
}


@pytest.mark.parametrize(("trainer", "train_values", "eval_values"), [
    ("SFTTrainer", {"mean_token_accuracy": "0.6849"}, {"mean_token_accuracy": "0.7012"}),
    ("DPOTrainer", {"rewards/chosen": "-0.0648", "rewards/rejected": "-1.0757", "rewards/margins": "1.0109",
                    "rewards/accuracies": "0.6594"},
     {"rewards/chosen": "-0.0136", "rewards/rejected": "-2.6069", "rewards/margins": "2.5933",
      "rewards/accuracies": "0.8969"}),
    ("GRPOTrainer", {"reward": "0.7767", "reward_std": "0.7151", "kl": "2.1898e-05",
                     "completions/mean_length": "95.85"},
     {"reward": "0.81", "reward_std": "0.62", "kl": "3e-05", "completions/mean_length": "90.5"}),
])
def test_a_trl_trainers_own_log_keys_are_metrics_that_read_only_their_own_lines(trainer, train_values, eval_values):
    """Before, a DPO, GRPO or SFT script got the Trainer's loss, grad_norm, learning rate and epoch only: what TRL
    logs beside them (DPO's reward margin, GRPO's reward, SFT's token accuracy) reached no chart."""
    config = trainer.replace("Trainer", "Config")
    metrics = {metric.name: compile_metric_regex(metric.regex)
               for metric in read_frameworks(TRL.format(trainer=trainer, config=config)).metric_definitions}
    train_line, eval_line = TRL_LINES[trainer]
    others = [line for name, lines in TRL_LINES.items() if name != trainer for line in lines]

    def read(name, line):
        found = metrics[name].search(line)
        return found.group(1) if found else None

    assert {key: read(f"train:{key}", train_line) for key in train_values} == train_values
    assert {key: read(f"validation:{key}", eval_line) for key in eval_values} == eval_values
    assert all(read(f"train:{key}", eval_line) is None and read(f"validation:{key}", train_line) is None
               for key in train_values)
    assert all(read(f"{split}:{key}", line) is None for key in train_values for split in ("train", "validation")
               for line in [*others, *TRAINER_LINES.values()])
    assert read("train:loss", train_line) is not None  # the Trainer's own keys stay


COMPUTE_METRICS = '''\
import numpy as np
from transformers import Trainer, TrainingArguments

def accuracy_and_f1(eval_pred):
    predictions = np.argmax(eval_pred.predictions, axis=-1)
    if predictions.size == 0:
        return dict(accuracy=0.0, f1=0.0)
    return {"accuracy": float((predictions == eval_pred.label_ids).mean()), "f1": f1(predictions), 3: "no key"}

args = TrainingArguments(output_dir="/opt/ml/model", eval_strategy="epoch", metric_for_best_model="eval_mcc")
Trainer(model=model, args=args, compute_metrics=accuracy_and_f1).train()
'''
EVALUATION_LINES = {
    "eval": "{'eval_loss': 0.6102, 'eval_accuracy': 0.75, 'eval_f1': 0.7143, 'eval_mcc': 0.5, 'eval_runtime': 0.21, "
            "'epoch': 1.0}",
    "eval5": "{'eval_loss': '0.6102', 'eval_accuracy': '0.75', 'eval_f1': '0.7143', 'eval_mcc': '0.5', 'epoch': '1'}",
    "mpi": "[1,mpirank:0,algo-1]<stdout>:{'eval_loss': 0.6102, 'eval_accuracy': 0.75, 'eval_f1': 0.7143, "
           "'eval_mcc': 0.5}",
    "train": "{'loss': 0.5213, 'grad_norm': 1.734, 'learning_rate': 4e-05, 'epoch': 1.0}",
    "end": "{'train_runtime': 12.31, 'train_loss': 0.5821, 'epoch': 3.0}",
    "log_metrics": "  eval_accuracy           =       0.75",
    "other_key": "{'eval_accuracy_top5': 0.99, 'eval_f1_macro': 0.2}",
}


def test_the_compute_metrics_keys_are_validation_metrics_read_from_the_evaluation_log_dict_only():
    reading = read_frameworks(COMPUTE_METRICS)
    metrics = {metric.name: compile_metric_regex(metric.regex) for metric in reading.metric_definitions}

    assert reading.evaluation_keys == ("accuracy", "f1", "mcc")
    read = {(name, line): (found.group(1) if (found := metrics[name].search(text)) else None)
            for name in ("validation:accuracy", "validation:f1", "validation:mcc")
            for line, text in EVALUATION_LINES.items()}
    assert read == {
        **{(name, line): None for name in ("validation:accuracy", "validation:f1", "validation:mcc")
           for line in ("train", "end", "log_metrics", "other_key")},
        **{("validation:accuracy", line): "0.75" for line in ("eval", "eval5", "mpi")},
        **{("validation:f1", line): "0.7143" for line in ("eval", "eval5", "mpi")},
        **{("validation:mcc", line): "0.5" for line in ("eval", "eval5", "mpi")},
    }


def test_a_lightning_trainer_s_literal_devices_and_nodes_are_read():
    cases = {  # the Trainer call, (devices, nodes)
        'L.Trainer(accelerator="gpu", devices=1)': (1, None),
        'pl.Trainer(devices=[0, 1], num_nodes=2)': (2, 2),
        'Trainer(devices="4", num_nodes=int(os.environ["N"]))': (4, None),
        'Trainer(gpus=8)': (8, None),
        'Trainer(devices="auto")': (None, None),
        'Trainer(devices=-1)': (None, None),
        'Trainer(devices=args.devices)': (None, None),
    }
    for call, expected in cases.items():
        reading = read_frameworks(f"import lightning as L\nfrom lightning import Trainer\ntrainer = {call}\n")
        assert (reading.devices, reading.nodes) == expected, call
    # a devices= of another library's Trainer is not Lightning's
    assert read_frameworks("from transformers import Trainer\nTrainer(devices=1)\n").devices is None


def test_a_framework_used_in_a_module_the_script_imports_from_the_source_folder_is_found(tmp_path):
    (tmp_path / "train.py").write_text("import argparse\nfrom mytrain import build_trainer\n\n"
                                       "build_trainer().train()\n")
    (tmp_path / "mytrain.py").write_text("import os\nfrom helpers.metrics import compute_metrics\n\n"
                                         "def build_trainer():\n    from transformers import Trainer\n"
                                         "    return Trainer(model=None, compute_metrics=compute_metrics)\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "metrics.py").write_text("from .engine import x\n"
                                                     "def compute_metrics(p):\n    return {'accuracy': 1.0}\n")
    (tmp_path / "helpers" / "engine.py").write_text("import deepspeed\n")
    (tmp_path / "unimported.py").write_text("import lightning\n")  # in the folder, never imported: not the job's

    survey = survey_source(tmp_path)

    frameworks = survey.reading.frameworks
    assert frameworks.launcher == "transformers Trainer"
    assert frameworks.imports == (FrameworkImport("transformers", 5, "mytrain.py"),
                                  FrameworkImport("deepspeed", 1, "helpers/engine.py"))
    assert frameworks.evaluation_keys == ("accuracy",)
    assert survey.imported_modules == ("mytrain.py", "helpers/__init__.py", "helpers/metrics.py",
                                       "helpers/engine.py")  # as Python imports them: the package first


def test_the_modules_read_beside_the_script_are_bounded_by_the_survey_s_limit(tmp_path, monkeypatch):
    monkeypatch.setattr("orchestrator.planning.source_survey.MAX_SCRIPTS_READ", 3)
    (tmp_path / "train.py").write_text("".join(f"import m{index}\n" for index in range(10)))
    for index in range(10):
        (tmp_path / f"m{index}.py").write_text("from transformers import Trainer\nTrainer()\n" if index == 9 else "")

    survey = survey_source(tmp_path)

    assert survey.imported_modules == ("m0.py", "m1.py", "m2.py")
    assert survey.reading.frameworks.launcher is None
