"""The training framework a script is built on, read from its text alone (`smtrain init`): the transformers
Trainer, an Accelerate loop, a Lightning Trainer, DeepSpeed. Each takes its ranks from torchrun's variables, so on
SageMaker it is launched one process per GPU under torchrun (mode torch_distributed) although the script itself
reads no RANK; the Trainer prints its logs as dicts, whose metrics get definitions that read their own lines only;
and each package must reach the image, through requirements.txt where the image lacks it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_IMPORTED = re.compile(r"^[ \t]*(?:from|import)[ \t]+(transformers|accelerate|lightning|pytorch_lightning|deepspeed)\b",
                       re.MULTILINE)
_DISTRIBUTIONS = {"pytorch_lightning": "pytorch-lightning"}
"""The package to install for an imported module, where its name differs."""
_HF_TRAINER = re.compile(r"\b(?:Seq2Seq)?(?:Trainer|TrainingArguments)\b")
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


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    regex: str


TRAINER_METRICS = (
    MetricDefinition("train:loss", "'loss': " + TRAINER_NUMBER),
    MetricDefinition("train:grad_norm", _TRAINER_TRAINING_LINE + "'grad_norm': " + TRAINER_NUMBER),
    MetricDefinition("train:learning_rate", _TRAINER_TRAINING_LINE + "'learning_rate': " + TRAINER_NUMBER),
    MetricDefinition("train:epoch", _TRAINER_TRAINING_LINE + "'epoch': " + TRAINER_NUMBER),
    MetricDefinition("validation:loss", "'eval_loss': " + TRAINER_NUMBER),
)
"""The transformers Trainer's log lines, `{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 4e-05, 'epoch': 1.0}`
and `{'eval_loss': 0.61, 'eval_runtime': 0.2, ..., 'epoch': 1.0}` (transformers 4; 5 quotes the numbers)."""


@dataclass(frozen=True)
class FrameworkImport:
    """A framework the script imports (or the Trainer imports for it: DeepSpeed for a config), which the image must
    hold."""

    module: str
    line: int

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

    @property
    def launch_reason(self) -> str:
        return f"{self.launcher}: one process per GPU under torchrun"


def read_frameworks(text: str, option_configs: tuple[str, ...] = ()) -> FrameworkReading:
    """The frameworks `text`, a script's source, imports and trains with; `option_configs`: the defaults of its
    `--deepspeed`/`--deepspeed_config` options. Never raises on any text."""
    imported: dict[str, int] = {}
    for match in _IMPORTED.finditer(text):
        imported.setdefault(match[1], _line(text, match.start(1)))
    trainer = "transformers" in imported and bool(_HF_TRAINER.search(text))
    configs = tuple(dict.fromkeys((*_DEEPSPEED_CONFIG.findall(text), *option_configs)))
    if trainer and configs and "deepspeed" not in imported:  # the Trainer imports it for its config, named here
        imported["deepspeed"] = _line(text, max(text.find(configs[0]), 0))
    return FrameworkReading(
        launcher=_launcher(text, imported, trainer),
        imports=tuple(FrameworkImport(module, line) for module, line in imported.items()),
        trainer_logs=trainer,
        deepspeed_configs=configs,
    )


def _launcher(text: str, imported: dict[str, int], trainer: bool) -> str | None:
    if trainer:
        return "DeepSpeed through the transformers Trainer" if "deepspeed" in imported else "transformers Trainer"
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


def canonical_name(name: str) -> str:
    """PEP 503: `PyTorch_Lightning` and `pytorch-lightning` name one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _shipped(framework_version: str) -> frozenset[str]:
    from orchestrator.specs.image_packages import covered_versions, image_packages

    def names(version: str) -> frozenset[str]:
        packages = image_packages(version)
        return frozenset(canonical_name(package.distribution) for package in (packages.packages if packages else ()))

    if framework_version in covered_versions():
        return names(framework_version)
    return frozenset.intersection(*(names(version) for version in covered_versions()))
