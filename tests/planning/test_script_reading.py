"""What `smtrain init` reads from a script's text: channels, the launcher it expects, argparse options as
SageMaker passes them, the metrics it prints; from the syntax tree, or by patterns where the text does not parse."""

from __future__ import annotations

from orchestrator.planning.script_reading import ScriptOption, read_script
from orchestrator.specs.metric_regex import compile_metric_regex


def test_channels_are_the_lower_case_names_of_the_variables_read():
    reading = read_script('import os\ntrain = os.environ["SM_CHANNEL_TRAIN"]\n'
                          'test = os.getenv("SM_CHANNEL_TEST_DATA")\ntrain_again = os.environ["SM_CHANNEL_TRAIN"]\n')
    assert reading.channels == ("train", "test_data") and not reading.reads_all_channels
    assert read_script('import json, os\nfor name in json.loads(os.environ["SM_CHANNELS"]): pass\n').reads_all_channels
    assert read_script('path = os.environ[f"SM_CHANNEL_{name.upper()}"]\n').reads_all_channels


def test_a_torchrun_script_is_told_from_one_that_ranks_itself_by_host():
    torchrun = read_script('import os\nrank = int(os.environ["RANK"])\n')
    assert torchrun.torchrun and not torchrun.mpi
    assert read_script("dist.init_process_group('nccl')\n").torchrun
    # mode none's multi-host scripts join a group too, at their index in SM_HOSTS: launched once per host
    by_host = read_script('hosts = json.loads(os.environ["SM_HOSTS"])\n'
                          'dist.init_process_group("gloo", rank=hosts.index(os.environ["SM_CURRENT_HOST"]))\n')
    assert not by_host.torchrun
    assert read_script("from mpi4py import MPI\n").mpi
    assert read_script("model.cuda()\n").uses_gpu and not read_script("model.cpu()\n").uses_gpu


def test_argparse_options_become_hyperparameters_with_their_defaults_or_say_why_not():
    reading = read_script('''
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("-b", "--batch-size", type=int, default=64)
parser.add_argument("--lr", default=1e-3)
parser.add_argument("--name", default="run")
parser.add_argument("--amp", action="store_true")
parser.add_argument("--data", default=os.environ.get("SM_CHANNEL_TRAIN"))
parser.add_argument("--output")
parser.add_argument("--sizes", default=[16, 16])
parser.add_argument("--hf-token", default="hf_abcdefghijklmnop")
parser.add_argument("positional")
''')
    options = {option.name: option for option in reading.options}
    assert [options[name].default for name in ("batch-size", "lr", "name")] == [64, 1e-3, "run"]
    assert options["amp"].left_out.startswith("a flag (store_true) takes no value")
    assert options["data"].left_out == "its default is computed, not written"
    assert options["output"].left_out == "it has no default"
    assert options["sizes"].left_out.startswith("its default is a list")
    assert options["hf-token"].left_out.startswith("it looks like a secret") and options["hf-token"].default is None
    assert "positional" not in options


def test_a_script_with_a_syntax_error_is_read_by_patterns():
    reading = read_script('print "python 2"\nparser.add_argument("--epochs", type=int, default=3)\n'
                          'parser.add_argument("--fast", action="store_true")\n'
                          'data = os.environ["SM_CHANNEL_TRAIN"]\nprint("loss: %f" % loss)\n')
    assert not reading.parsed
    assert reading.options[0] == ScriptOption("epochs", 3)
    assert reading.options[1].left_out.startswith("a flag")
    assert reading.channels == ("train",) and [metric.name for metric in reading.metrics] == ["train:loss"]


def test_printed_metrics_become_definitions_that_match_the_printed_lines():
    reading = read_script('print(f"step {step} loss={loss:.4f} val_loss: {val:.4f} grad_accum={n} lr={lr}")\n'
                          'print("train_acc=", acc)\nprint(f"data_dir={path}")\n')
    metrics = {metric.name: metric.regex for metric in reading.metrics}
    assert list(metrics) == ["train:loss", "validation:loss", "train:lr", "train:acc"]
    line = "step 3 loss=0.4200 val_loss: 0.5100 grad_accum=4 lr=0.001"
    found = {name: compile_metric_regex(regex).search(line) for name, regex in metrics.items()}
    assert found["train:loss"].group(1) == "0.4200" and found["validation:loss"].group(1) == "0.5100"
    assert found["train:lr"].group(1) == "0.001"
    assert compile_metric_regex(metrics["train:acc"]).search("train_acc= 0.91").group(1) == "0.91"


MNIST_EXAMPLE = """\
def train(model, loader, epoch):
    for batch_idx, (data, target) in enumerate(loader):
        logger.info("Train Epoch: {} [{}/{} ({:.0f}%)]\\tLoss: {:.6f}".format(
            epoch, batch_idx * len(data), len(loader.sampler), 100.0 * batch_idx / len(loader), loss.item()))

def test(model, test_loader):
    logger.info("Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\\n".format(
        test_loss, correct, len(test_loader.dataset), 100.0 * correct / len(test_loader.dataset)))
"""
"""The SageMaker PyTorch MNIST example's two lines: an epoch's training loss, and the test set's loss and accuracy."""
MNIST_LINES = {"train": "Train Epoch: 2 [6400/60000 (11%)]\tLoss: 0.301548",
               "test": "Test set: Average loss: 0.0523, Accuracy: 9838/10000 (98%)"}


def test_the_mnist_example_gets_its_test_set_metrics_as_validation_ones_each_read_from_its_own_line():
    metrics = {metric.name: compile_metric_regex(metric.regex) for metric in read_script(MNIST_EXAMPLE).metrics}

    read = {(name, line): (found.group(1) if (found := pattern.search(MNIST_LINES[line])) else None)
            for name, pattern in metrics.items() for line in MNIST_LINES}
    assert read == {
        ("train:Epoch", "train"): "2", ("train:Epoch", "test"): None,
        ("train:Loss", "train"): "0.301548", ("train:Loss", "test"): None,
        ("validation:loss", "train"): None, ("validation:loss", "test"): "0.0523",
        # the percentage, not the count correct (9838) SageMaker would chart as the accuracy
        ("validation:Accuracy", "train"): None, ("validation:Accuracy", "test"): "98",
    }


def test_printed_metrics_get_names_that_differ_in_more_than_case_and_counts_are_no_values():
    cases = [  # (the script's print calls, the metrics' names, a printed line, the value each name reads from it)
        ('print(f"train loss: {a}")\nprint(f"epoch {e} Loss: {b}")\n', ["train:loss"],
         "train loss: 0.5", {"train:loss": "0.5"}),
        ('print("Epoch %d loss=%.3f" % (e, l))\nprint("eval loss=%.3f" % v)\n', ["train:loss", "validation:loss"],
         "eval loss=0.250", {"train:loss": None, "validation:loss": "0.250"}),
        ('print(f"val acc: {right}/{total}")\n', [], "val acc: 90/100", {}),
        ('print("Accuracy: %d/%d (%.0f%%)" % (a, b, c))\n', ["train:Accuracy"],
         "Accuracy: 90/100 (90%)", {"train:Accuracy": "90"}),
    ]
    for script, names, line, values in cases:
        metrics = read_script(script).metrics
        assert [metric.name for metric in metrics] == names, script
        read = {metric.name: (found.group(1) if (found := compile_metric_regex(metric.regex).search(line)) else None)
                for metric in metrics}
        assert read == values, script


def test_any_text_is_read_without_raising():
    for text in ("\x00\x01\x02binary", "def f(:\n", "(" * 10_000, "x = 1\n" * 10):
        assert read_script(text) is not None


def test_options_whose_passed_value_the_script_would_misread_are_left_out():
    reading = read_script('''
parser.add_argument("--shuffle", default=True)
parser.add_argument("--fp16", type=bool, default=False)
parser.add_argument("--amp", type=str2bool, default=False)
parser.add_argument("--model", required=True)
parser.add_argument("--seed", required=True, default=1)
parser.add_argument("data_dir")
parser.add_argument("extra", nargs="*")
''')
    options = {option.name: option for option in reading.options}
    # SageMaker passes `--shuffle False`: argparse keeps the text "False", and bool("False") is True
    assert options["shuffle"].left_out.startswith("SageMaker would pass it as the text True")
    assert options["fp16"].left_out == ("SageMaker would pass it as the text False, which argparse (type=bool) "
                                        "makes a true value")
    assert options["amp"] == ScriptOption("amp", False)  # its own parser reads `False`
    assert options["model"].left_out.startswith("REQUIRED, with no default")
    assert options["seed"] == ScriptOption("seed", 1)
    assert reading.positionals == ("data_dir",)
    by_patterns = read_script('print "2"\nparser.add_argument("--fp16", type=bool, default=False)\n')
    assert by_patterns.options[0].left_out.startswith("SageMaker would pass it as the text False")


def test_what_stops_a_script_run_as_sagemaker_runs_it_is_read():
    notebook = read_script("import os\n\n!pip install torch\n%time x = 1\n")
    assert notebook.ipython and notebook.unparsed_line == 3
    assert read_script("print 'py2'\n").unparsed_line == 1 and not read_script("print 'py2'\n").ipython
    assert read_script("cli = LightningCLI(Model, Data)\n").needs_subcommand
    assert not read_script("cli = LightningCLI(Model, Data, run=False)\n").needs_subcommand
    assert not read_script("LightningCLI(Model, args=[\"fit\", *sys.argv[1:]])\n").needs_subcommand
    assert read_script("parser = HfArgumentParser((TrainingArguments,))\n").dataclass_options


def test_cuda_used_through_a_device_call_or_a_trainer_counts_as_a_gpu():
    for text in ("torch.cuda.set_device(hvd.local_rank())\n", "trainer = Trainer(model=model, args=args)\n",
                 "accelerator = Accelerator()\n", "trainer = L.Trainer(max_epochs=3)\n"):
        assert read_script(text).uses_gpu, text
    assert not read_script("if torch.cuda.is_available(): pass\n").uses_gpu


def test_a_training_line_that_begins_with_its_metric_is_not_read_from_the_evaluation_line():
    reading = read_script('for step in range(9):\n    print(f"loss={loss:.4f}")\n'
                          'print(f"Evaluation: loss={val:.4f}")\n')
    metrics = {metric.name: compile_metric_regex(metric.regex) for metric in reading.metrics}
    lines = {"train": "loss=0.4200", "train under mpirun": "[1,mpirank:0,algo-1]<stdout>:loss=0.4200",
             "eval": "Evaluation: loss=0.5100"}

    read = {(name, line): (found.group(1) if (found := pattern.search(text)) else None)
            for name, pattern in metrics.items() for line, text in lines.items()}

    assert read == {("train:loss", "train"): "0.4200", ("train:loss", "train under mpirun"): "0.4200",
                    ("train:loss", "eval"): None,
                    ("validation:loss", "train"): None, ("validation:loss", "train under mpirun"): None,
                    ("validation:loss", "eval"): "0.5100"}


def test_a_default_the_containers_shell_would_drop_or_split_is_left_out():
    """`--fsdp ""` (the transformers examples' default): /bin/sh gives the script `--fsdp` with no value, and argparse
    stops it; `"full_shard auto_wrap"` arrives as two words (docs/sagemaker-contract.md §5)."""
    reading = read_script('parser.add_argument("--fsdp", type=str, default="")\n'
                          'parser.add_argument("--wrap", default="full_shard auto_wrap")\n'
                          'parser.add_argument("--optim", default="adamw_torch")\n')
    options = {option.name: option for option in reading.options}

    assert options["fsdp"].left_out.startswith("its default is empty or holds a space")
    assert options["wrap"].left_out.startswith("its default is empty or holds a space")
    assert options["optim"] == ScriptOption("optim", "adamw_torch")


def test_a_training_line_logged_with_its_metric_first_is_not_read_from_the_logged_evaluation_line():
    """`logger.info(f"loss=...")` beside `logging.info("Evaluation: loss=...")`: the training metric's regex allows
    what a logging format writes before the message (time, level, logger name), never a word of the message."""
    reading = read_script('import logging\nlogger = logging.getLogger(__name__)\nfor step in range(9):\n'
                          '    logger.info(f"loss={loss:.4f} step={step}")\n'
                          'logging.info("Evaluation: loss=%.4f", val)\n')
    metrics = {metric.name: compile_metric_regex(metric.regex) for metric in reading.metrics}
    formats = {  # logging's default, a dated one, transformers' own, and under mpirun
        "default": "INFO:__main__:{}", "dated": "2026-11-28 10:00:00,123 - __main__ - INFO - {}",
        "transformers": "[INFO|train.py:12] 2026-11-28 10:00:00,123 >> {}",
        "mpirun": "[1,mpirank:0,algo-1]<stderr>:INFO:root:{}", "time only": "2026-11-28 10:00:00,123 {}",
    }

    for name, line in formats.items():
        train, evaluation = line.format("loss=0.4200 step=3"), line.format("Evaluation: loss=0.5100")
        read = {(metric, text): (found.group(1) if (found := pattern.search(text)) else None)
                for metric, pattern in metrics.items() for text in (train, evaluation)}
        assert read == {("train:loss", train): "0.4200", ("train:loss", evaluation): None,
                        ("validation:loss", train): None, ("validation:loss", evaluation): "0.5100"}, name


def test_what_imported_modules_read_is_the_scripts_but_their_options_only_where_it_calls_their_parser():
    script = "from helpers import setup\nsetup()\n"
    helper = ("import os\nimport argparse\nhosts = os.environ['SM_HOSTS']\nrank = os.environ['RANK']\n"
              "def setup():\n    argparse.ArgumentParser().add_argument('--lr', default=0.1)\n")

    only_imported = read_script(script, (helper,))
    called = read_script(script, (helper,), (helper,))

    assert not only_imported.torchrun and not only_imported.options  # ranked by SM_HOSTS in the helper: per host
    assert [(option.name, option.default) for option in called.options] == [("lr", 0.1)]
