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
