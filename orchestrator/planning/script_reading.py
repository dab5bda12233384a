"""What a training script reads and prints, from its text alone (`smtrain init`): the channels it opens, how it
expects to be launched, its argparse options and the metrics it prints. The script is never run or imported: its
syntax tree is read where it parses, and where it does not (a syntax error, another Python's syntax) the same
facts are read from its text by patterns, the argparse options from their one-line form."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from orchestrator.redact import holds_no_secret, is_secret_name

_CHANNEL = re.compile(r"SM_CHANNEL_([A-Z0-9_]*[A-Z0-9])\b")
_ALL_CHANNELS = re.compile(r"\bSM_CHANNELS\b|SM_CHANNEL_\{")
_TORCHRUN = re.compile(r"""["'](?:LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)["']|\binit_process_group\b""")
_HOST_RANKS = re.compile(r"\bSM_HOSTS\b|\bSM_CURRENT_HOST\b")
"""A script that ranks itself from SageMaker's host list is launched once per host (mode none), even though it
joins a process group."""
_MPI = re.compile(r"\bmpi4py\b|\bOMPI_COMM_WORLD_(?:RANK|SIZE)\b")
_GPU = re.compile(r"""\.cuda\(|["']cuda(?::\d+)?["']|["']nccl["']""")
_PRINTED_METRIC = re.compile(r"""\b(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<separator>=|: ?)(?:\{|%|["']\s*,)""")
"""`loss={loss:.3f}`, `loss: %f`, `"loss=", loss`: a number printed after its name."""
_METRIC_WORDS = frozenset({"loss", "acc", "accuracy", "perplexity", "ppl", "f1", "auc", "bleu", "rouge", "lr",
                           "epoch"})
"""A printed name is a metric's where one of its `_`-separated words is one of these (`val_loss`, `train_acc`;
not `grad_accum`, `data_dir`), or that holds `learning_rate`."""
_VALIDATION_PREFIXES = ("validation_", "valid_", "val_", "eval_")
_TRAIN_PREFIX = "train_"
_ONE_LINE_OPTION = re.compile(r"""add_argument\(\s*(?:["']-\w["']\s*,\s*)?["'](?P<flag>--[\w.-]+)["']"""
                              r"""(?P<rest>[^()\n]*)""")
_ONE_LINE_DEFAULT = re.compile(r"""\bdefault\s*=\s*(?P<value>[^,)]+)""")
_NO_VALUE_ACTIONS = ("store_true", "store_false", "store_const", "count", "help", "version",
                     "BooleanOptionalAction")
"""argparse actions whose option takes no value: SageMaker passes every hyperparameter as `--name value`, which
such an option refuses (`unrecognized arguments: True`)."""


@dataclass(frozen=True)
class ScriptOption:
    """One `add_argument("--name", ...)` of the script: what `init` writes as a hyperparameter, or says why not."""

    name: str
    """The flag without its dashes, as SageMaker passes it back (`--batch-size 64` from `batch-size: 64`)."""
    default: Any = None
    left_out: str | None = None
    """Why it is no hyperparameter of the starting spec (a flag that takes no value, no literal default, a
    secret), or None."""


@dataclass(frozen=True)
class PrintedMetric:
    """A metric the script prints as `name=value` or `name: value`, as a SageMaker metric definition."""

    key: str
    separator: str

    @property
    def name(self) -> str:
        for prefix in _VALIDATION_PREFIXES:
            if self.key.lower().startswith(prefix):
                return f"validation:{self.key[len(prefix):]}"
        return f"train:{self.key.removeprefix(_TRAIN_PREFIX) or self.key}"

    @property
    def regex(self) -> str:
        return rf"\b{self.key}{self.separator.strip()}\s*([-+0-9.eE]+)"


@dataclass(frozen=True)
class ScriptReading:
    """What one script reads and prints."""

    channels: tuple[str, ...] = ()
    """Channel names from `SM_CHANNEL_<NAME>`, lower case as the toolkit's variable is the name upper-cased."""
    reads_all_channels: bool = False
    """It reads `SM_CHANNELS` (or builds `SM_CHANNEL_{name}`): its channels are not spelled out."""
    torchrun: bool = False
    """It reads RANK, LOCAL_RANK or WORLD_SIZE, or joins a process group without ranking itself by host."""
    mpi: bool = False
    uses_gpu: bool = False
    options: tuple[ScriptOption, ...] = ()
    metrics: tuple[PrintedMetric, ...] = ()
    parsed: bool = True
    """False where the text is no Python that parses here: read by patterns only."""


def read_script(text: str) -> ScriptReading:
    """What `text`, a training script's source, reads and prints; never raises on any text."""
    try:
        tree: ast.Module | None = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        tree = None
    torchrun = bool(_TORCHRUN.search(text)) and not _HOST_RANKS.search(text)
    return ScriptReading(
        channels=tuple(dict.fromkeys(name.lower() for name in _CHANNEL.findall(text))),
        reads_all_channels=bool(_ALL_CHANNELS.search(text)),
        torchrun=torchrun,
        mpi=bool(_MPI.search(text)) and not torchrun,
        uses_gpu=bool(_GPU.search(text)),
        options=_tree_options(tree) if tree is not None else _line_options(text),
        metrics=_printed_metrics(text),
        parsed=tree is not None,
    )


def _tree_options(tree: ast.Module) -> tuple[ScriptOption, ...]:
    found: dict[str, ScriptOption] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        flag = next((flag for flag in flags if flag.startswith("--") and len(flag) > 2), None)
        if flag is None:
            continue
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        action = keywords.get("action")
        action_name = (action.value if isinstance(action, ast.Constant) else
                       action.attr if isinstance(action, ast.Attribute) else None)
        found.setdefault(flag, _option(flag[2:], keywords.get("default"), action_name))
    return tuple(found.values())


def _option(name: str, default: ast.expr | None, action: str | None) -> ScriptOption:
    if action in _NO_VALUE_ACTIONS:
        return ScriptOption(name, left_out=f"a flag ({action}) takes no value, and SageMaker passes one")
    try:
        value = ast.literal_eval(default) if default is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ScriptOption(name, left_out="its default is computed, not written")
    return _valued(name, value)


def _valued(name: str, value: Any) -> ScriptOption:
    if value is None:
        return ScriptOption(name, left_out="it has no default")
    if not isinstance(value, (bool, int, float, str)):
        return ScriptOption(name, left_out="its default is a list or mapping, which arrives as one string")
    if is_secret_name(name) and not holds_no_secret(value, name):
        return ScriptOption(name, left_out="it looks like a secret: pass it from a secret store, not the spec")
    return ScriptOption(name, default=value)


def _line_options(text: str) -> tuple[ScriptOption, ...]:
    """argparse options written on one line, for a script that does not parse."""
    found: dict[str, ScriptOption] = {}
    for match in _ONE_LINE_OPTION.finditer(text):
        name, rest = match["flag"][2:], match["rest"]
        action = next((action for action in _NO_VALUE_ACTIONS if action in rest), None)
        default = _ONE_LINE_DEFAULT.search(rest)
        if action:
            found.setdefault(name, _option(name, None, action))
            continue
        try:
            value = ast.literal_eval(default["value"].strip()) if default else None
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            found.setdefault(name, ScriptOption(name, left_out="its default is computed, not written"))
            continue
        found.setdefault(name, _valued(name, value))
    return tuple(found.values())


def _printed_metrics(text: str) -> tuple[PrintedMetric, ...]:
    found: dict[str, PrintedMetric] = {}
    for match in _PRINTED_METRIC.finditer(text):
        key = match["key"]
        if _METRIC_WORDS & set(key.lower().split("_")) or "learning_rate" in key.lower():
            metric = PrintedMetric(key, match["separator"])
            found.setdefault(metric.name, metric)
    return tuple(found.values())
