"""A plan as a person reads it: the lines `smtrain plan` prints, and the same lines as a notebook shows a plan.

One list of styled lines for both, so that a notebook user sees what the command line shows (the request in
brief, the findings, the ranks per host, the worst-case cost). The values come from `to_dict`, secrets masked; the
plan's HTML is masked once more for the spec's secret values (`redact.masks_its_repr`).
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from orchestrator.specs.catalog import hourly_price, lookup
from orchestrator.specs.topology import topology
from orchestrator.wording import counted

if TYPE_CHECKING:
    from orchestrator.planning.plan import Plan
    from orchestrator.specs.model import Channel, JobSpec

ROWS_SHOWN = 16
Line = tuple[str, str]
"""(style, text): style is "title", a finding's severity ("error", "unverified", "warning", "notice"), or ""."""
_HTML_COLOURS = {"error": "#cf222e", "unverified": "#9a6700", "warning": "#9a6700", "notice": "#0969da"}


def summary_line(spec: JobSpec) -> str:
    """`mode none, 2 x ml.c5.2xlarge, 1 process per host -> world size 2`."""
    topo = topology(spec, lookup(spec.instance_type))
    per_host = f"{counted(topo.processes_per_host, 'process')} per host"
    if spec.instance.groups:
        groups = ", ".join(f"{group.name} {group.count} x {group.type}" for group in spec.instance.groups)
        launched = (f" on group {', '.join(spec.distribution.instance_groups)}"
                    if spec.distribution.instance_groups else "")
        return (f"{spec.name}: instance groups {groups}; mode {spec.distribution.mode.value}{launched}, "
                f"{per_host} ({topo.launcher}) -> world size {topo.world_size}")
    return (f"{spec.name}: mode {spec.distribution.mode.value}, {spec.host_count} x {spec.instance_type}, "
            f"{per_host} ({topo.launcher}) -> world size {topo.world_size}")


def plan_lines(plan: Plan) -> list[Line]:
    """The plan on one screen: what runs where, the image, the findings, the ranks per host, the
    hyperparameters and the worst-case cost."""
    from rich.filesize import decimal

    document = plan.to_dict()
    request = document["create_training_job_request"]
    lines = [f"  {summary_line(plan.spec)}",
             f"  image   {request['AlgorithmSpecification']['TrainingImage']}",
             f"  region  {plan.target.region}",
             f"  role    {plan.target.role}",
             f"  output  {plan.target.output_path}",
             (f"  source  {plan.source.directory}: {counted(len(plan.source.files), 'file')}, "
              f"{decimal(plan.source.size_bytes)} packed -> {plan.source_uri}")]
    lines += [f"  {line}" for line in sources_lines(plan)]
    for name, channel in plan.spec.inputs.items():
        lines.append(f"  input   {name}: {channel.uri}{_channel_options(channel)}")
    lines.append(f"  hyperparameters  {_hyperparameters_line(document['spec']['hyperparameters'])}")
    styled: list[Line] = [("title", f"plan for {plan.job_name}"), *(("", line) for line in lines)]
    for finding in plan.findings:
        styled += [(finding.severity, f"{finding.severity}: {finding.field}: {finding.message}"),
                   ("", f"  fix: {finding.fix}")]
    styled += [("", line) for line in _rank_lines(document["ranks"], plan)]
    styled.append(("", _cost_line(plan)))
    return styled


def plan_html(plan: Plan) -> str:
    """The lines of `plan_lines` for a notebook: the title in bold, findings in their colour."""
    shown = []
    for style, text in plan_lines(plan):
        escaped = html.escape(text.rstrip())
        if style == "title":
            escaped = f"<b>{escaped}</b>"
        elif style in _HTML_COLOURS:
            escaped = f'<span style="color:{_HTML_COLOURS[style]}">{escaped}</span>'
        shown.append(escaped)
    shown.append("<i>the full CreateTrainingJob request: plan.to_dict()['create_training_job_request']</i>")
    return f'<pre class="smtrain-plan">{chr(10).join(shown)}</pre>'


def _cost_line(plan: Plan) -> str:
    cost = plan.cost
    if cost.max_total is None:
        return f"worst-case cost: no price on record for {plan.spec.instance_type}"
    return (f"worst-case cost: {cost.currency} {cost.max_total:,.2f} = {hourly_price(cost.price_per_instance_hour)}/h x "
            f"{cost.instance_count} x {cost.max_billable_seconds / 3600:g} h ({cost.basis})")


def _channel_options(channel: Channel) -> str:
    """` (Pipe, ShardedByS3Key, groups train)`: what a channel sets besides its location; "" for a bare URI."""
    options = [value for value in (channel.input_mode and channel.input_mode.value,
                                   channel.distribution.value if channel.sharded else None,
                                   channel.s3_data_type.value if channel.s3_data_type.value != "S3Prefix" else None,
                                   channel.compression and channel.compression.value, channel.content_type) if value]
    if channel.instance_groups:
        options.append(f"groups {', '.join(channel.instance_groups)}")
    return f" ({', '.join(options)})" if options else ""


def _hyperparameters_line(values: dict[str, Any]) -> str:
    return " ".join(f"{key}={json.dumps(value) if not isinstance(value, str) else value}"
                    for key, value in values.items()) or "-"


def _rank_lines(rows: list[dict[str, Any]], plan: Plan) -> list[str]:
    """One line per host (its global and local ranks), at most ROWS_SHOWN hosts, then the launcher and master."""
    hosts: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        hosts.setdefault(row["host"], []).append(row)
    lines = [f"ranks: world size {plan.topology.world_size}, {plan.topology.launcher}"]
    names = list(hosts)
    shown = names if len(names) <= ROWS_SHOWN else names[: ROWS_SHOWN // 2] + names[-ROWS_SHOWN // 2:]
    for host in shown:
        ranks = [row["rank"] for row in hosts[host]]
        span = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}-{ranks[-1]}"
        lines.append(f"  {host}  {span} (local 0-{len(ranks) - 1})" if len(ranks) > 1 else f"  {host}  {span}")
    if len(names) > len(shown):
        lines.append(f"  ... {len(names) - len(shown)} more hosts (every rank in --output json)")
    lines.append(f"  {_master_note(plan)}")
    return lines


def sources_lines(plan: Plan) -> list[str]:
    """`from ...` lines for the values neither the spec file nor a default gave (all of them in --output json)."""
    grouped: dict[str, list[str]] = {}
    for name, source in plan.sources.items():
        if source.kind in ("spec", "default"):
            continue
        if source.kind == "sdk-defaults":
            origin, item = f"the {source.level}'s SageMaker SDK defaults {source.where}", name  # keys: -o json
        elif source.kind in ("--set", "environment", "fallback"):
            origin, item = source.kind, f"{name} ({source.where})"
        elif source.kind.startswith("--") or source.kind.endswith("="):  # an option or API keyword, as typed:
            # `from --region eu-west-1: region`, `from region='eu-west-1': region`
            origin, item = source.where, name
        else:
            origin, item = f"{source.kind} {source.where}", name
        grouped.setdefault(origin, []).append(item)
    return [f"from {origin}: {', '.join(items)}" for origin, items in grouped.items()]


def _master_note(plan: Plan) -> str:
    topo = plan.topology
    if not topo.rules.assigns_ranks:
        return "each host runs the script once; rank = index of SM_CURRENT_HOST in SM_HOSTS"
    if topo.rules.single_host_rendezvous == (topo.master_addr, topo.master_port):
        return f"single node: {topo.launcher}'s own rendezvous on {topo.master_addr}:{topo.master_port}"
    return ("the master is the first host of the instance group SageMaker writes in resourceconfig.json: "
            "usually algo-1, not guaranteed (docs/sagemaker-contract.md §6)")
