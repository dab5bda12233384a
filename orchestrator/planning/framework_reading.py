"""The training framework a script is built on, read from its text alone (`smtrain init`): the transformers
Trainer (TRL's trainers are ones), an Accelerate loop, a Lightning Trainer, DeepSpeed. Each takes its ranks from
torchrun's variables, so on SageMaker it is launched one process per GPU under torchrun (mode torch_distributed)
although the script itself reads no RANK; a Lightning Trainer given a literal `devices=N` wants N of them per host,
and one given `accelerator="cpu"` trains on CPUs, once per host (torchrun's modes run on GPUs only);
the Trainer prints its logs as dicts, whose metrics (its `compute_metrics` keys and a TRL trainer's own keys among
them) get definitions that read their own lines only; and each package must reach the image, through
requirements.txt where the image lacks it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from orchestrator import python_source
from orchestrator.specs.image_pins import canonical_name

_IMPORTED = re.compile(r"^[ \t]*(?:from|import)[ \t]+"
                       r"(transformers|trl|accelerate|lightning|pytorch_lightning|deepspeed)\b", re.MULTILINE)
_DISTRIBUTIONS = {"pytorch_lightning": "pytorch-lightning"}
"""The package to install for an imported module, where its name differs."""
_HF_TRAINER = re.compile(r"\b(?:Seq2Seq)?(?:Trainer|TrainingArguments)\b")
_TRL_TRAINER = re.compile(r"\b[A-Z][A-Za-z0-9]*Trainer\b")
"""TRL's trainers (`SFTTrainer`, `DPOTrainer`, `GRPOTrainer`): subclasses of the transformers Trainer, launched and
logging as it does."""
_ACCELERATOR = re.compile(r"\bAccelerator\(")
_LIGHTNING_TRAINER = re.compile(r"\b(?:Trainer|LightningCLI)\(")
"""A Lightning Trainer, or the LightningCLI that builds one."""
_DEEPSPEED_CONFIG = re.compile(r"""\bdeepspeed(?:_config)?["']?\s*[=:]\s*["']([^"'\n]+\.json)["']""")
"""A DeepSpeed config file the script names: `deepspeed="ds_config.json"`, `{"deepspeed": "ds.json"}` (an
option's default is read with the options)."""

TRAINER_NUMBER = r"'?([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
"""A value of the Trainer's log dict: `0.6931` (transformers 4), `'0.6931'` (transformers 5 prints it as text)."""
_TRAINER_TRAINING_LINE = r"'loss': [^}]*"
"""Only the Trainer's training log starts with `'loss'`; its eval line holds `'eval_loss'`, its last line
`'train_loss'`, and both hold `'epoch'` too."""
_TRAINER_EVALUATION_LINE = r"\{[^}]*'eval_"
"""A key of the Trainer's evaluation log dict, `{'eval_loss': 0.61, 'eval_accuracy': 0.75, ...}`: a dict's key,
prefixed `eval_` by the Trainer, never the `  eval_accuracy = 0.75` of its `log_metrics` table."""
_METRIC_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EVALUATION_PREFIX = "eval_"
_COMPUTE_METRICS = "compute_metrics"
_LIGHTNING_DEVICES = ("devices", "gpus")
"""A Lightning Trainer's devices per host (`gpus`: Lightning 1's spelling)."""


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    regex: str


def training_metric(key: str) -> MetricDefinition:
    """`train:<key>` read from the Trainer's training log dict only (the one holding `'loss'`), never from the
    evaluation line's `'eval_<key>'` nor from a key that ends as this one does (`'objective/kl'` for `kl`)."""
    return MetricDefinition(f"train:{key}", f"{_TRAINER_TRAINING_LINE}'{key}': {TRAINER_NUMBER}")


def evaluation_metric(key: str) -> MetricDefinition:
    """`validation:<key>` read from the Trainer's evaluation log dict, where `compute_metrics`' `key` is logged as
    `'eval_<key>'` (transformers 4 and 5, under mpirun's prefix too)."""
    return MetricDefinition(f"validation:{key}", f"{_TRAINER_EVALUATION_LINE}{key}': {TRAINER_NUMBER}")


TRAINER_METRICS = (
    MetricDefinition("train:loss", "'loss': " + TRAINER_NUMBER),
    *(training_metric(key) for key in ("grad_norm", "learning_rate", "epoch")),
    MetricDefinition("validation:loss", "'eval_loss': " + TRAINER_NUMBER),
)
"""The transformers Trainer's log lines, `{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 4e-05, 'epoch': 1.0}`
and `{'eval_loss': 0.61, 'eval_runtime': 0.2, ..., 'epoch': 1.0}` (transformers 4; 5 quotes the numbers)."""


TRL_LOG_KEYS = {
    "SFTTrainer": ("mean_token_accuracy",),
    "DPOTrainer": ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"),
    "GRPOTrainer": ("reward", "reward_std", "kl", "completions/mean_length"),
}
"""What TRL's trainers add to the Trainer's log dicts that a user charts: SFT's token accuracy, DPO's implicit
rewards of the chosen and rejected answers, their margin and how often the chosen one wins, GRPO's mean reward, its
spread within a group, the KL from the reference model (logged where beta is not 0) and the completions' length.
Each is written after the Trainer's own keys in the training line (`{'loss': 0.47, 'grad_norm': ...,
'rewards/margins': 1.01, ..., 'epoch': 0.41}`) and prefixed `eval_` in the evaluation line (TRL 0.2x: its
trainers' `log` merges these into the Trainer's dict)."""


@dataclass(frozen=True)
class FrameworkImport:
    """A framework the script imports (or the Trainer imports for it: DeepSpeed for a config), which the image must
    hold."""

    module: str
    line: int
    path: str = ""
    """The file of the source folder that imports it, relative to the folder; "" until the survey says which."""

    @property
    def distribution(self) -> str:
        return _DISTRIBUTIONS.get(self.module, self.module)


@dataclass(frozen=True)
class FrameworkReading:
    """The frameworks one script is built on."""

    launcher: str | None = None
    """The framework that starts one process per GPU under torchrun (`transformers Trainer`), or None."""
    imports: tuple[FrameworkImport, ...] = ()
    trainer_logs: bool = False
    """It trains with the transformers Trainer, which prints its log dicts."""
    deepspeed_configs: tuple[str, ...] = ()
    """DeepSpeed config files the script names, in its text or as an option's default, as written."""
    evaluation_keys: tuple[str, ...] = ()
    """The `compute_metrics` keys (`accuracy` of `return {"accuracy": ...}`, `metric_for_best_model`'s), which the
    Trainer logs as `eval_<key>`; metrics only where a Trainer trains (`metric_definitions`)."""
    devices: int | None = None
    """A Lightning Trainer's literal `devices=N`: the processes it expects per host; None where it is not written
    as a number (`"auto"`: one per GPU)."""
    nodes: int | None = None
    """A Lightning Trainer's literal `num_nodes=N`: the hosts it expects."""
    trl_trainers: tuple[str, ...] = ()
    """The TRL trainers the script names (`DPOTrainer`), whose own log keys (TRL_LOG_KEYS) get definitions too."""
    on_cpu: bool = False
    """A Lightning Trainer given `accelerator="cpu"`: it trains on CPUs, starting its devices' processes itself, so
    no launcher starts it per GPU (`launcher` is None)."""

    @property
    def launch_reason(self) -> str:
        return f"{self.launcher}: one process per GPU under torchrun"

    @property
    def metric_definitions(self) -> tuple[MetricDefinition, ...]:
        """The Trainer's log dicts' metrics, its `compute_metrics` keys' among them; none without the Trainer."""
        if not self.trainer_logs:
            return ()
        trl_keys = [key for trainer in self.trl_trainers for key in TRL_LOG_KEYS.get(trainer, ())]
        return (*TRAINER_METRICS, *(metric for key in trl_keys for metric in (training_metric(key),
                                                                               evaluation_metric(key))),
                *(evaluation_metric(key) for key in self.evaluation_keys))


def read_frameworks(text: str, option_configs: tuple[str, ...] = (), tree: ast.Module | None = None
                    ) -> FrameworkReading:
    """The frameworks `text`, a script's source, imports and trains with; `option_configs`: the defaults of its
    `--deepspeed`/`--deepspeed_config` options; `tree`: the text's syntax tree where the caller parsed it (parsed
    here otherwise; keyword arguments are read from it only). Never raises on any text."""
    imported: dict[str, int] = {}
    for match in _IMPORTED.finditer(text):
        imported.setdefault(match[1], _line(text, match.start(1)))
    trainer = _trainer(text, imported)
    configs = tuple(dict.fromkeys((*_DEEPSPEED_CONFIG.findall(text), *option_configs)))
    if trainer and configs and "deepspeed" not in imported:  # the Trainer imports it for its config, named here
        imported["deepspeed"] = _line(text, max(text.find(configs[0]), 0))
    tree = tree if tree is not None else parsed_tree(text)
    lightning = "lightning" in imported or "pytorch_lightning" in imported
    on_cpu = bool(lightning and tree and _lightning_accelerator(tree) == "cpu")
    return FrameworkReading(
        launcher=None if on_cpu else _launcher(text, imported, trainer),
        imports=tuple(FrameworkImport(module, line) for module, line in imported.items()),
        trainer_logs=trainer is not None,
        deepspeed_configs=configs,
        evaluation_keys=_evaluation_keys(tree) if tree else (),  # its Trainer may be built in another module
        devices=_lightning_number(tree, _LIGHTNING_DEVICES) if lightning and tree else None,
        nodes=_lightning_number(tree, ("num_nodes",)) if lightning and tree else None,
        on_cpu=on_cpu,
        trl_trainers=tuple(dict.fromkeys(_TRL_TRAINER.findall(text))) if "trl" in imported else (),
    )


def combined(readings: dict[str, FrameworkReading]) -> FrameworkReading:
    """The frameworks of a script and of the source folder's modules it imports (`readings` by file, the script
    first), each import at its own file's line: a Trainer built in a helper module launches the job as one built
    in the script does."""
    found = list(readings.values())
    imports: dict[str, FrameworkImport] = {}
    for path, reading in readings.items():
        for framework in reading.imports:
            imports.setdefault(framework.module, replace(framework, path=path))
    return FrameworkReading(
        launcher=next((reading.launcher for reading in found if reading.launcher), None),
        imports=tuple(imports.values()),
        trainer_logs=any(reading.trainer_logs for reading in found),
        deepspeed_configs=tuple(dict.fromkeys(config for reading in found for config in reading.deepspeed_configs)),
        evaluation_keys=tuple(dict.fromkeys(key for reading in found for key in reading.evaluation_keys)),
        devices=next((reading.devices for reading in found if reading.devices is not None), None),
        nodes=next((reading.nodes for reading in found if reading.nodes is not None), None),
        on_cpu=any(reading.on_cpu for reading in found),
        trl_trainers=tuple(dict.fromkeys(trainer for reading in found for trainer in reading.trl_trainers)),
    )


def parsed_tree(text: str) -> ast.Module | None:
    """`text`'s syntax tree, or None where it does not parse; never raises."""
    try:
        return python_source.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        return None


def _trainer(text: str, imported: dict[str, int]) -> str | None:
    """`transformers Trainer`, `TRL SFTTrainer`, or None where the script trains with neither."""
    if "trl" in imported and (trl := _TRL_TRAINER.search(text)):
        return f"TRL {trl[0]}"
    if "transformers" in imported and _HF_TRAINER.search(text):
        return "transformers Trainer"
    return None


def _evaluation_keys(tree: ast.Module) -> tuple[str, ...]:
    """The keys of the dicts `compute_metrics` returns (the function so named, or passed as `compute_metrics=`)
    written as literals, and `metric_for_best_model`'s literal, without the `eval_` the Trainer adds."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    keywords = [keyword for call in calls for keyword in call.keywords]
    named = {_COMPUTE_METRICS} | {keyword.value.id for keyword in keywords
                                  if keyword.arg == _COMPUTE_METRICS and isinstance(keyword.value, ast.Name)}
    keys = [key for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in named
            for returned in ast.walk(node) if isinstance(returned, ast.Return)
            for key in _dict_keys(returned.value)]
    keys += [keyword.value.value for keyword in keywords if keyword.arg == "metric_for_best_model"
             and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str)]
    return tuple(dict.fromkeys(key.removeprefix(_EVALUATION_PREFIX) for key in keys
                               if _METRIC_KEY.fullmatch(key) and key.removeprefix(_EVALUATION_PREFIX)))


def _dict_keys(node: ast.expr | None) -> list[str]:
    """The literal text keys of `{"accuracy": ...}` or `dict(accuracy=...)`."""
    if isinstance(node, ast.Dict):
        return [key.value for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [keyword.arg for keyword in node.keywords if keyword.arg]
    return []


def _lightning_number(tree: ast.Module, names: tuple[str, ...]) -> int | None:
    """The first of `names` a `Trainer(...)` call gives as a whole number (`devices=1`, `devices="2"`) or a list
    (`devices=[0, 1]`: two); None where it is computed or "auto" (-1 too: every GPU)."""
    return next((_count(keyword.value) for keyword in _trainer_keywords(tree) if keyword.arg in names), None)


def _lightning_accelerator(tree: ast.Module) -> str | None:
    """The accelerator a `Trainer(...)` call names as a literal (`accelerator="cpu"`), lower-cased; None where it
    names none or computes it."""
    return next((keyword.value.value.lower() for keyword in _trainer_keywords(tree)
                 if keyword.arg == "accelerator" and isinstance(keyword.value, ast.Constant)
                 and isinstance(keyword.value.value, str)), None)


def _trainer_keywords(tree: ast.Module) -> Iterator[ast.keyword]:
    """The keywords of every `Trainer(...)` call, in the tree's order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _names_trainer(node.func):
            yield from node.keywords


def _names_trainer(called: ast.expr) -> bool:
    """`Trainer(...)` or `L.Trainer(...)`, `pl.Trainer(...)`."""
    return (isinstance(called, ast.Name) and called.id == "Trainer"
            or isinstance(called, ast.Attribute) and called.attr == "Trainer")


def _count(node: ast.expr) -> int | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        return len(node.elts) or None
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _launcher(text: str, imported: dict[str, int], trainer: str | None) -> str | None:
    if trainer:
        return f"DeepSpeed through the {trainer}" if "deepspeed" in imported else trainer
    if "accelerate" in imported and _ACCELERATOR.search(text):
        return "Accelerate"
    if ("lightning" in imported or "pytorch_lightning" in imported) and _LIGHTNING_TRAINER.search(text):
        return "Lightning Trainer"
    if "deepspeed" in imported:
        return "DeepSpeed"
    return None


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def unshipped(imports: tuple[FrameworkImport, ...], required: frozenset[str],
              framework_version: str) -> tuple[FrameworkImport, ...]:
    """The frameworks imported that neither the image of `framework_version` ships nor requirements.txt names
    (`required`: canonical names): the script would stop at its import. An image the table does not cover is
    taken to ship what every covered image ships (accelerate), and nothing more."""
    shipped = _shipped(framework_version)
    return tuple(framework for framework in imports
                 if canonical_name(framework.distribution) not in required | shipped)


def _shipped(framework_version: str) -> frozenset[str]:
    from orchestrator.specs.image_packages import covered_versions, image_packages

    def names(version: str) -> frozenset[str]:
        packages = image_packages(version)
        return frozenset(canonical_name(package.distribution) for package in (packages.packages if packages else ()))

    if framework_version in covered_versions():
        return names(framework_version)
    return frozenset.intersection(*(names(version) for version in covered_versions()))
