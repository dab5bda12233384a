"""The SageMaker Python SDK's words that a spec writes otherwise, and how the spec writes them: a user who brings
`max_run=3600` or `metric_definitions=[...]` from an Estimator call is told the spec's key, with their value, not
the list of every key (or the nearest spelling, `use_spot_instances` -> `instance`); one who brings the API's
shape of a mapping (`tags=[{"Key": ..., "Value": ...}]`, `environment` as `NAME=value` items, `hyperparameters`
as JSON text) is shown the mapping, with their values, not "write `key: value` pairs". The SDK names a spec
shares (`entry_point`, `hyperparameters`, `role`, `framework_version`, `py_version`, `output_path`, ...) need no
entry."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from orchestrator.redact import MASK, is_secret_name

_SPEC_PLACES: dict[tuple[str, ...], str] = {
    ("metric_definitions",): "metrics: {value}",
    ("instance_type",): "instance: {{type: {value}}}",
    ("instance_count",): "instance: {{count: {value}}}",
    ("volume_size",): "instance: {{volume_size_gb: {value}}}",
    ("instance_groups",): "instance: {{groups: [{{name: train, type: ml.g5.12xlarge, count: 2}}]}}",
    ("max_run",): "max_run_seconds: {value}",
    ("use_spot_instances",): "spot: {{enabled: {value}}}",
    ("max_wait",): "spot: {{max_wait_seconds: {value}}}",
    ("checkpoint_s3_uri",): "checkpoint: {{s3_uri: {value}}}",
    ("checkpoint_local_path",): "checkpoint: {{s3_uri: s3://..., local_path: {value}}}",
    ("base_job_name",): "name: {value}",
    ("keep_alive_period_in_seconds",): "keep_alive_seconds: {value}",
    ("subnets",): "network: {{subnets: {value}}}",
    ("security_group_ids",): "network: {{security_group_ids: {value}}}",
    ("enable_network_isolation",): "network: {{enable_network_isolation: {value}}}",
    ("encrypt_inter_container_traffic",): "network: {{encrypt_inter_container_traffic: {value}}}",
    ("distribution", "torch_distributed"): "distribution: {{mode: torch_distributed}}",
    ("distribution", "pytorchddp"): "distribution: {{mode: pytorchddp}}",
    ("distribution", "mpi"): "distribution: {{mode: mpi, processes_per_host: 8}}",
    ("distribution", "smdistributed"): "distribution: {{mode: smddp}}",
}
"""An SDK argument's place (a top-level key, or a key of `distribution`'s SDK dict) -> the spec's way to write
it, `{value}` standing for the value written."""


def sdk_name_fix(loc: Sequence[Any], value: Any) -> str | None:
    """`did you mean ...?` for an SDK Estimator argument written at `loc`, with `value` in its place; None for
    any other key."""
    place = _SPEC_PLACES.get(tuple(str(part) for part in loc))
    if place is None:
        return None
    shown = _metrics(value) if tuple(loc) == ("metric_definitions",) else _flow(value)
    return (f"did you mean `{place.format(value=_shortened(shown))}`? (`{'.'.join(map(str, loc))}` is the "
            "SageMaker Python SDK Estimator's name)")


def sdk_spec_key(loc: Sequence[Any]) -> str | None:
    """The spec's top-level key an SDK argument written at the top level stands for (`base_job_name` -> `name`):
    that key's own `Field required` would ask for what the argument's fix already gives."""
    place = _SPEC_PLACES.get(tuple(str(part) for part in loc)) if len(loc) == 1 else None
    return place.partition(":")[0] if place else None


def sdk_shape_fix(loc: Sequence[Any], value: Any) -> str | None:
    """`did you mean `tags: {team: ml}`?` for a mapping field (`tags`, `environment`, `hyperparameters`) written
    in the shape the SageMaker API or SDK gives it, with the user's own values (those under secret-looking names
    masked); None for any other value."""
    shape = _SHAPES.get(tuple(str(part) for part in loc))
    mapping = shape[0](value) if shape else None
    if not shape or not mapping:
        return None
    import yaml

    shown = yaml.safe_dump(_without_secrets(mapping), default_flow_style=True, sort_keys=False, width=1 << 16,
                           allow_unicode=True).strip()
    return f"did you mean `{loc[0]}: {_shortened(shown, 100)}`? ({shape[1]}; a spec writes a mapping)"


def _pairs(value: Any, key: str, item_value: str) -> dict[str, Any] | None:
    """`[{Key: team, Value: ml}]` -> {team: ml} (its two names in any case); None unless every item is one pair."""
    if not isinstance(value, list) or not value:
        return None
    found = {}
    for item in value:
        named = {str(name).lower(): held for name, held in item.items()} if isinstance(item, dict) else {}
        if set(named) != {key, item_value}:
            return None
        found[str(named[key])] = named[item_value]
    return found


def _tags(value: Any) -> dict[str, Any] | None:
    return _pairs(value, "key", "value")


def _environment(value: Any) -> dict[str, Any] | None:
    """`[NCCL_DEBUG=WARN]` (a shell's, docker's `-e`) or `[{Name: NCCL_DEBUG, Value: WARN}]` (a container
    definition's) as {NCCL_DEBUG: WARN}."""
    split = [item.partition("=") for item in value if isinstance(item, str)] if isinstance(value, list) else []
    if split and len(split) == len(value) and all(name and equals for name, equals, _ in split):
        return {name: held for name, _, held in split}
    return _pairs(value, "name", "value")


def _hyperparameters(value: Any) -> dict[str, Any] | None:
    """'{"epochs": 3}' (the JSON `aws sagemaker create-training-job --hyper-parameters` is given) as {epochs: 3}."""
    try:
        read = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return read if isinstance(read, dict) and read else None


_SHAPES: dict[tuple[str, ...], tuple[Callable[[Any], dict[str, Any] | None], str]] = {
    ("tags",): (_tags, "a list of `Key`/`Value` pairs is the SageMaker API's and SDK's form"),
    ("environment",): (_environment, "a list of `NAME=value` items or `Name`/`Value` pairs is a shell's, docker's "
                                     "or a container definition's form"),
    ("hyperparameters",): (_hyperparameters, "JSON text is the AWS CLI's form"),
}
"""A mapping field -> what reads its value in another tool's shape as the mapping meant, and whose shape it is."""


def _without_secrets(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping with each value under a secret-looking name masked: the fix echoes what the user wrote."""
    return {name: MASK if is_secret_name(str(name)) else
            _without_secrets(held) if isinstance(held, Mapping) else held for name, held in mapping.items()}


def _metrics(definitions: Any) -> str:
    """The SDK's `[{"Name": ..., "Regex": ...}]` as the spec's `[{name: ..., regex: '...'}]`."""
    items = definitions if isinstance(definitions, list) else []
    written = [f"{{name: {item.get('Name')}, regex: '{str(item.get('Regex')).replace(chr(39), chr(39) * 2)}'}}"
               for item in items if isinstance(item, dict)]
    return f"[{', '.join(written)}]" if written else "[{name: train:loss, regex: 'loss=([0-9.]+)'}]"


def _shortened(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def _flow(value: Any) -> str:
    """The value as YAML's flow style writes it on one line (`true`, `[subnet-1, subnet-2]`, `ml.g5.xlarge`)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return f"[{', '.join(_flow(item) for item in value)}]"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, default=str)
