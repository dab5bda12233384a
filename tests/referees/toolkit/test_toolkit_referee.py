"""The training toolkit as referee of the emulator: for every mode, SageMaker's own toolkits (sagemaker-training
and sagemaker-pytorch-training from PyPI) read each emulated host's config tree and say what they would export
and run; the emulator must have exported the same, variable by variable, and built the same launcher.

The emulator prepares the run from the plan (nothing is launched); `toolkit_harness.py` runs the toolkits in a
process per case (forked from one that imported them, tests/support/forked.py), with an `nvidia-smi` that lists the
instance's GPUs (the toolkit counts them there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from forked import run_forked

from orchestrator.emulator.launching.toolkit_launchers import ToolkitRefusal, parse_custom_mpi_options
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing.layout import release_directory
from orchestrator.emulator.preparing.prepared_run import PreparedRun, prepare_run
from orchestrator.emulator.run_options import Options
from orchestrator.specs.catalog import lookup
from orchestrator.specs.loader import load

HARNESS = Path(__file__).with_name("toolkit_harness.py")
ENTRY = "import os\nprint(os.environ['SM_CURRENT_HOST'])\n"
EDGE_HYPERPARAMETERS = {"b": 7, "backend": "gloo", "learning-rate": 0.001, "use-cuda": True, "layers": [64, 32],
                        "opt": {"beta1": 0.9, "name": "adam"}, "note": None, "save-to": "/opt/ml/model/best"}
HETERO_GROUPS = [{"name": "data", "type": "ml.c5.2xlarge", "count": 1},
                 {"name": "train", "type": "ml.g5.12xlarge", "count": 2}]
# name, spec fields, extra source files, entry point, host order
CASES = [
    ("none-2-hosts", {"instance": {"type": "ml.c5.2xlarge", "count": 2}, "hyperparameters": EDGE_HYPERPARAMETERS,
                      "environment": {"OUT": "/opt/ml/output/data/x", "PLAIN": "1"}}, {}, "train.py", None),
    ("none-network-isolation", {"instance": {"type": "ml.c5.2xlarge", "count": 1},
                                "network": {"enable_network_isolation": True}}, {}, "train.py", None),
    ("none-gpu-setup-py", {"instance": {"type": "ml.g5.12xlarge", "count": 1}},
     {"setup.py": "from setuptools import setup\nsetup(name='t', py_modules=['train'])\n"}, "train.py", None),
    ("mpi-3-hosts-reordered", {"instance": {"type": "ml.c5.2xlarge", "count": 3},
                               "distribution": {"mode": "mpi", "processes_per_host": 2,
                                                "custom_mpi_options": "--NCCL_DEBUG=WARN -x FOO=1 --bind-to none"},
                               "hyperparameters": {"epochs": 1}},
     {}, "train.py", ("algo-3", "algo-1")),
    ("mpi-efa-shell-entry", {"instance": {"type": "ml.p4d.24xlarge", "count": 2},
                             "distribution": {"mode": "mpi", "processes_per_host": 1},
                             "hyperparameters": {"msg": "hello world"},
                             "checkpoint": {"s3_uri": "s3://bucket/ckpt/"}},
     {"run.sh": "#!/bin/sh\necho \"$@\"\n"}, "run.sh", None),
    ("pytorchddp-2-hosts", {"instance": {"type": "ml.p4d.24xlarge", "count": 2},
                            "distribution": {"mode": "pytorchddp"}}, {}, "train.py", ("algo-2",)),
    ("smddp-1-host", {"instance": {"type": "ml.p4d.24xlarge", "count": 1}, "distribution": {"mode": "smddp"}},
     {}, "train.py", None),
    ("smddp-3-hosts", {"instance": {"type": "ml.p4d.24xlarge", "count": 3},
                       "distribution": {"mode": "smddp", "custom_mpi_options": "--NCCL_DEBUG WARN -x A=1"}},
     {}, "train.py", None),
    ("torch_distributed-2-hosts", {"instance": {"type": "ml.g5.12xlarge", "count": 2},
                                   "distribution": {"mode": "torch_distributed"}, "inputs": {"train": "DATA"}},
     {}, "train.py", ("algo-2",)),
    ("torch_distributed-efa", {"instance": {"type": "ml.p4d.24xlarge", "count": 2},
                               "distribution": {"mode": "torch_distributed"}}, {}, "train.py", None),
    ("torch_distributed-1-host", {"instance": {"type": "ml.g5.12xlarge", "count": 1},
                                  "distribution": {"mode": "torch_distributed"}}, {}, "train.py", None),
    # Heterogeneous clusters: each host's group, its hosts, the groups, is_hetero; channels only on their groups.
    ("hetero-none-2-groups", {"instance": {"groups": HETERO_GROUPS},
                              "inputs": {"raw": {"uri": "DATA", "instance_groups": ["data"]},
                                         "shards": {"uri": "DATA", "distribution": "ShardedByS3Key",
                                                    "instance_groups": ["train"]}}}, {}, "train.py", None),
    ("hetero-mpi-training-group", {"instance": {"groups": HETERO_GROUPS},
                                   "distribution": {"mode": "mpi", "instance_groups": ["train"],
                                                    "processes_per_host": 2},
                                   "inputs": {"shards": {"uri": "DATA", "instance_groups": ["train"]}}},
     {}, "train.py", None),
]


def _prepare(tmp_path: Path, fields: dict[str, Any], files: dict[str, str], entry_point: str,
             host_order: tuple[str, ...] | None) -> PreparedRun:
    source = tmp_path / "src"
    source.mkdir()
    (source / entry_point).write_text(ENTRY)
    for name, text in files.items():
        (source / name).write_text(text)
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-0.csv").write_text("1,2\n")
    (data / "part-1.csv").write_text("3,4\n")  # two objects: a sharded channel gives each of two hosts one
    spec = {"name": "referee", "entry_point": entry_point, "source_dir": str(source), "framework_version": "2.3.0",
            "metrics": [], **fields}
    spec["inputs"] = {"training": str(data), **{name: {**value, "uri": str(data)} if isinstance(value, dict)
                                                else str(data) for name, value in spec.get("inputs", {}).items()}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    settings = Options(run_dir=tmp_path / "run", host_order=host_order)
    prepared = prepare_run(local_plan(load(path), settings), settings)
    release_directory(prepared.layout.root)  # as run_local lets go of it when its run ends
    return prepared


def _referee(tmp_path: Path, prepared: PreparedRun) -> dict[str, dict[str, Any]]:
    """The toolkits' view of every host, from the harness."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    # Each host's own instance type's GPUs (instance groups differ): the harness sets SAGEMAKER_BASE_DIR per host.
    cases = []
    for host in prepared.layout.hosts:
        group = prepared.job.group_of(host.name)
        instance = lookup(group.instance_type)
        listing = "".join(f"GPU {index}: {instance.accelerator_model or 'GPU'} (UUID: GPU-{index})\\n"
                          for index in range(instance.gpus))
        cases.append(f"  {host.name}) printf '{listing}' ;;\n")
    (bin_dir / "nvidia-smi").write_text('#!/bin/sh\ncase "$(basename "$SAGEMAKER_BASE_DIR")" in\n'
                                        + "".join(cases) + "esac\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SM_", "AWS_", "OMPI_"))}
    env.update(TRAINING_JOB_NAME=prepared.job.job_name,
               SAGEMAKER_TRAINING_MODULE="sagemaker_pytorch_container.training:main",
               PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]))
    output = tmp_path / "toolkit.json"
    harness = run_forked(str(HARNESS), [str(output), *(str(host.root) for host in prepared.layout.hosts)],
                         (str(HARNESS),), env=env, cwd=tmp_path)
    assert harness.returncode == 0, harness.stderr
    return json.loads(output.read_text())


def _at(variables: dict[str, str], root: Path, seen_root: Path) -> dict[str, str]:
    """What the toolkit derives where the host's files are at `seen_root`: the harness reads them from the host's
    folder (SAGEMAKER_BASE_DIR), and the toolkit only joins its paths onto that base, so in a host's namespace
    (the files at /opt/ml, no SAGEMAKER_BASE_DIR) it derives the same values at /opt/ml."""
    return {key: value.replace(str(root), str(seen_root)) for key, value in variables.items()}


@pytest.mark.parametrize(("name", "fields", "files", "entry_point", "host_order"), CASES, ids=[c[0] for c in CASES])
def test_the_toolkit_derives_what_the_emulator_exported_and_runs(tmp_path, name, fields, files, entry_point,
                                                                 host_order):
    prepared = _prepare(tmp_path, fields, files, entry_point, host_order)
    processes = prepared.host_processes("referee", 4242)
    toolkit = _referee(tmp_path, prepared)
    assert sorted(toolkit) == [item.host.name for item in processes]
    for item in processes:
        seen, host = toolkit[item.host.name], item.host.name
        derived = _at(seen["sm_variables"], item.host.root, prepared.host_fs.seen(item.host).root)
        # Every SM_* variable, byte for byte, and no other.
        emulated = {key: value for key, value in item.env.items()
                    if key.startswith("SM_") and key != "SM_DLC_TORCH_VERSION"}
        differences = {key: (emulated.get(key), derived.get(key))
                       for key in emulated.keys() | derived.keys() if emulated.get(key) != derived.get(key)}
        assert differences == {}, f"{host}: emulator vs toolkit"
        # What the toolkits put into the environment before the launcher (MASTER_*, NCCL_*, CURRENT_HOST, ...).
        expected = {key: value for key, value in item.toolkit_env.items()
                    if not key.startswith("SM_") or key == "SM_DLC_TORCH_VERSION"}
        expected.pop("SAGEMAKER_TRAINING_MODULE")  # the DLC's, already in the harness's environment
        assert expected == seen["framework_environment"], host
        # The runner, its process count, and the command line argument for argument.
        assert item.toolkit is not None or seen["command"] is None, host
        if item.toolkit is not None:
            assert item.toolkit.runner.value == seen["runner"], host
            assert item.toolkit.processes_per_host == seen["processes_per_host"], host
            assert item.toolkit.argv == seen["command"], host
            assert {**expected, **item.toolkit.environment} == seen["launcher_environment"], host
        # hyperparameters.json is the request's, with container paths placed on this host; every channel of the
        # request is there (under network isolation the source tarball arrives as the channel `code`).
        written = json.loads((item.host.config_dir / "hyperparameters.json").read_text())
        request = prepared.plan.create_training_job_request["HyperParameters"]
        assert written.keys() == request.keys()
        assert {key for key in request if written[key] != request[key]} <= {"save-to", "sagemaker_submit_directory"}
        group = seen["sm_variables"]["SM_CURRENT_INSTANCE_GROUP"]
        channels = {channel["ChannelName"] for channel in prepared.plan.create_training_job_request["InputDataConfig"]
                    if group in channel["DataSource"]["S3DataSource"].get("InstanceGroupNames", [group])}
        assert all(any((item.host.data_dir / name).iterdir()) for name in channels)
        assert {path.name for path in item.host.data_dir.iterdir()} == channels, host  # no other group's channel
        module_dir = json.loads(seen["sm_variables"]["SM_TRAINING_ENV"])["module_dir"]
        # the tarball is where it says (under network isolation in the `code` channel, at /opt/ml in the namespace)
        tarball = module_dir.removeprefix("file://")
        here = prepared.layout.host_path(item.host, tarball) if tarball.startswith("/opt/ml/") else Path(tarball)
        assert here.is_file(), module_dir


@pytest.mark.parametrize("options", ["", "--NCCL_DEBUG WARN", "--NCCL_DEBUG=TRACE -x A=1", "-x B=2 --NCCL_DEB INFO",
                                     "--bind-to none --NCCL_DEBUG"])
def test_custom_mpi_options_are_parsed_as_the_toolkit_parses_them(options):
    from sagemaker_training.mpi import _parse_custom_mpi_options

    try:
        known, rest = _parse_custom_mpi_options(options)
    except SystemExit:  # the toolkit's argparse stops the job: the emulator refuses before it starts
        with pytest.raises(ToolkitRefusal):
            parse_custom_mpi_options(options)
        return
    assert parse_custom_mpi_options(options) == (known.NCCL_DEBUG, rest)


def test_the_efa_lists_are_the_toolkits():
    import sagemaker_training

    from orchestrator.emulator.launching.toolkit_launchers import EFA_NCCL_INSTANCES, EFA_RDMA_INSTANCES

    assert EFA_NCCL_INSTANCES == set(sagemaker_training.SM_EFA_NCCL_INSTANCES)
    assert EFA_RDMA_INSTANCES == set(sagemaker_training.SM_EFA_RDMA_INSTANCES)


FAILING_OUTPUT = [
    "epoch=1 step=3/10 train_loss=0.5",
    "[1,1]<stderr>: Traceback (most recent call last):",
    '[1,1]<stderr>:   File "train.py", line 9, in <module>',
    '[1,1]<stderr>:     raise ValueError("boom: bad hyperparameter")',
    "[1,1]<stderr>: ValueError: boom: bad hyperparameter",
    "[1,0]<stderr>: RuntimeError: Connection closed by peer",
    "[1,0]<stderr>: RuntimeError: Connection closed by peer",
    "prterun detected that one or more processes exited with non-zero status",
]


def test_the_failure_message_is_the_toolkits():
    """ErrorMessage as `process.watch` collects it and `check_error` joins it (one stream: the emulator reads
    stdout and stderr merged)."""
    import asyncio

    import sagemaker_training
    from sagemaker_training import process as toolkit_process

    from orchestrator.emulator.reporting.failures import TOOLKIT_ERROR_NAMES, toolkit_error_message

    async def watched() -> str:
        reader = asyncio.StreamReader()
        reader.feed_data(("\n".join(FAILING_OUTPUT) + "\n").encode())
        reader.feed_eof()
        return await toolkit_process.watch(reader, 1, ["ExecuteUserScriptError"])

    joined = " ".join(["", asyncio.run(watched())])  # check_error: the (empty) other stream, then this one
    expected = "\n".join(dict.fromkeys(joined.split("\n"))).strip()
    assert toolkit_error_message(FAILING_OUTPUT) == expected
    assert expected.startswith('raise ValueError("boom: bad hyperparameter")')
    names = [*sagemaker_training._PYTHON_ERRORS_, *sagemaker_training._MPI_ERRORS_, "ExecuteUserScriptError"]
    assert list(TOOLKIT_ERROR_NAMES) == names
