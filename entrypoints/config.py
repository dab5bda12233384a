"""Hyperparameters of train.py, as the SageMaker toolkit passes them: ``--key value`` (contract §5).

Each field of `TrainConfig` is one ``--key`` option (underscores become dashes), exactly the names in
``orchestrator/contract.py`` ``HYPERPARAMETERS``. Unknown keys are rejected: on SageMaker they are user typos.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields

import dist_env

TRAINERS = ("auto", "dp", "ddp", "gloo", "fsdp", "model_parallel")
MODELS = ("linear", "regression", "convnet", "mlp", "resnet50")
OPTIMIZERS = ("sgd", "adam")
PRECISIONS = ("fp32", "bf16", "fp16")
ZERO_STAGES = (0, 1, 2, 3)


class HyperparameterError(ValueError):
    """A hyperparameter is unknown or has an invalid value."""


def _option(default, help: str, *, choices: Sequence[str | int] | None = None, minimum: float | None = None):
    return field(default=default, metadata={"help": help, "choices": choices, "minimum": minimum})


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """One training run's settings; `build_parser` turns each field into a ``--key`` option."""

    trainer: str = _option("auto", "dp | ddp | gloo | fsdp | model_parallel, or auto to pick from the devices "
                                   "and the launcher", choices=TRAINERS)
    model: str = _option("mlp", "linear (5->2), regression (20->1), convnet (1x28x28, 10 classes), mlp, "
                                "resnet50 (3x32x32, 10 classes)", choices=MODELS)
    mlp_hidden: int = _option(64, "width of each hidden layer of the mlp model", minimum=1)
    mlp_layers: int = _option(2, "number of hidden layers of the mlp model", minimum=1)
    epochs: int = _option(2, "passes over the dataset", minimum=1)
    batch_size: int = _option(32, "samples per step on each rank", minimum=1)
    lr: float = _option(0.01, "learning rate", minimum=0.0)
    optimizer: str = _option("sgd", "sgd or adam", choices=OPTIMIZERS)
    seed: int = _option(0, "seed for the synthetic data, initial weights and data order", minimum=0)
    num_samples: int = _option(2048, "size of the synthetic dataset (ignored with a train channel)", minimum=1)
    grad_accum: int = _option(1, "micro-batches accumulated into each optimizer step", minimum=1)
    precision: str = _option("fp32", "fp32, or bf16/fp16 autocast (GPU only; fsdp: a mixed-precision policy)",
                             choices=PRECISIONS)
    zero_stage: int = _option(0, "ZeRO stage. 1: trainers ddp and gloo shard the optimizer state over the ranks; "
                                 "2 and 3: trainer fsdp, which shards everything and by default (3) frees each "
                                 "block's gathered parameters after its forward pass, while 2 keeps them until its "
                                 "backward pass (fewer all-gathers, more memory during the step)", choices=ZERO_STAGES)
    num_stages: int = _option(0, "model_parallel stages per host; 0 = one per GPU of the host (2 on a CPU host)",
                              minimum=0)
    pipeline_chunks: int = _option(1, "model_parallel: micro-batches each batch is cut into, so that every stage "
                                      "works on one of them at once (GPipe); 1 = stages one after another",
                                   minimum=1)
    prefetch: int = _option(0, "batches a background thread loads ahead (copied on a side CUDA stream on GPUs); "
                               "0 = none", minimum=0)
    num_workers: int = _option(0, "DataLoader worker processes per rank", minimum=0)
    checkpoint_dir: str = _option(MISSING, "checkpoint directory; default $SAGEMAKER_BASE_DIR/checkpoints, "
                                           "else /opt/ml/checkpoints")
    checkpoint_every: int = _option(0, "steps between checkpoints; 0 = at each epoch end only", minimum=0)
    log_every: int = _option(50, "steps between metric lines", minimum=1)
    simulate_step_seconds: float = _option(0.0, "sleep per step, to emulate heavier compute", minimum=0.0)
    collective_timeout_seconds: int = _option(1800, "seconds a collective waits for the other ranks before the job "
                                                    "fails with an error, instead of hanging until max_run",
                                              minimum=1)

    def __post_init__(self) -> None:
        for spec in fields(self):
            minimum = spec.metadata["minimum"]
            value = getattr(self, spec.name)
            if minimum is not None and value < minimum:
                raise HyperparameterError(f"--{_option_name(spec.name)} must be at least {minimum}, got {value}")

    def hyperparameters(self) -> dict[str, object]:
        """The settings keyed by their ``--key`` names, as written to model.json."""
        return {_option_name(name): value for name, value in asdict(self).items()}


class _RaisingParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so that train.py can write the reason to the failure file."""

    def error(self, message: str) -> None:  # type: ignore[override]
        options = ", ".join(f"--{_option_name(spec.name)}" for spec in fields(TrainConfig))
        raise HyperparameterError(f"{message}; train.py takes {options}")


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """The ``--key value`` options of train.py; defaults that depend on the container come from `environ`."""
    parser = _RaisingParser(prog="train.py", description="smtrain's shared SageMaker training entry point.",
                            allow_abbrev=False)
    container_defaults = {"checkpoint_dir": str(dist_env.container_paths(environ).checkpoint_dir)}
    for spec in fields(TrainConfig):
        default = container_defaults[spec.name] if spec.default is MISSING else spec.default
        parser.add_argument(f"--{_option_name(spec.name)}", dest=spec.name, type=type(default), default=default,
                            choices=spec.metadata["choices"], help=spec.metadata["help"])
    return parser


def parse_config(argv: Sequence[str], environ: Mapping[str, str]) -> TrainConfig:
    """Parses ``--key value`` arguments into a validated `TrainConfig`.

    Raises:
        HyperparameterError: an unknown key, a missing or malformed value, or a value out of range.
    """
    return TrainConfig(**vars(build_parser(environ).parse_args(argv)))


def _option_name(field_name: str) -> str:
    return field_name.replace("_", "-")
