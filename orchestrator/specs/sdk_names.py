"""The SageMaker Python SDK's Estimator arguments that a spec names otherwise, and where each goes: a user who
brings `max_run=3600` or `metric_definitions=[...]` from an Estimator call is told the spec's key, with their
value, not the list of every key (or the nearest spelling, `use_spot_instances` -> `instance`). The SDK names a
spec shares (`entry_point`, `hyperparameters`, `role`, `framework_version`, `py_version`, `output_path`, ...) need
no entry."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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
