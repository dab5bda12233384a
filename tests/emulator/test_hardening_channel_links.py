"""Links in a local channel folder: a host's copy never writes through to outside the channel, and a
link inside the channel reads the copy's file, as an upload to S3 and the download SageMaker makes would give."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from deep_trees import nested_folders
from forked import SMTRAIN_PRELOAD, run_forked

from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.instances.container import ContainerJob
from orchestrator.emulator.preparing.channels import NotChannelData, PipeFeeders, copy_tree, objects
from orchestrator.emulator.preparing.layout import HostInputs, new_layout, pipe_channels, prepare
from orchestrator.emulator.preparing.prepared_run import _refuse_pipe_entries
from orchestrator.errors import SpecError
from orchestrator.planning.packaging import package

pytestmark = pytest.mark.hardening


def _no_run_directories(_directory: str, _names: list[str]) -> set[str]:
    return set()


def _channel(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file\n")
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "real.txt").write_text("inside\n")
    (data / "absolute").symlink_to(outside)
    (data / "sub" / "relative").symlink_to("../real.txt")
    (data / "sub" / "up").symlink_to("..")
    (data / "dangling").symlink_to(tmp_path / "missing")
    return data


def test_a_copy_holds_no_link_to_outside_and_inside_links_read_the_copy(tmp_path):
    copy = tmp_path / "copy"
    copy_tree(_channel(tmp_path), copy, _no_run_directories)
    assert not (copy / "absolute").is_symlink() and (copy / "absolute").read_text() == "the user's file\n"
    assert os.readlink(copy / "sub" / "relative") == "../real.txt"
    (copy / "real.txt").write_text("changed in the copy\n")
    assert (copy / "sub" / "relative").read_text() == "changed in the copy\n"  # the copy's, not the user's
    assert (tmp_path / "data" / "real.txt").read_text() == "inside\n"
    assert (copy / "sub" / "up").resolve() == copy.resolve()
    assert not os.path.lexists(copy / "dangling")
    (copy / "absolute").write_text("written by the job\n")
    assert (tmp_path / "outside.txt").read_text() == "the user's file\n"


@pytest.mark.slow
def test_a_job_writing_to_its_channel_copy_leaves_the_users_file_and_reads_inside_links(tmp_path):
    _channel(tmp_path)
    job = tmp_path / "job"  # the spec's folder is its source_dir: the channel lives beside it
    job.mkdir()
    (job / "train.py").write_text(textwrap.dedent("""
        import json, os
        channel = os.environ["SM_CHANNEL_TRAIN"]
        with open(os.path.join(channel, "absolute"), "a") as handle:
            handle.write("written by the job\\n")
        print(json.dumps({"relative": open(os.path.join(channel, "sub", "relative")).read()}))
    """))
    spec = job / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "links", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--input",
                             f"train={tmp_path / 'data'}", "--run-dir", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "outside.txt").read_text() == "the user's file\n"
    log = (tmp_path / "run" / "logs" / "algo-1.log").read_text()
    assert json.dumps({"relative": "inside\n"}) in log


def _local_with_input(tmp_path: Path, train: object, hosts: int = 1) -> subprocess.CompletedProcess:
    """`smtrain local` of a job of `hosts` hosts whose `train` input is `train`, from the job's folder, its
    copies bounded in size (`_bounded_smtrain`)."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text("print('ran')\n")
    spec = job / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "inputs", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": hosts}, "max_run_seconds": 600,
                                    "inputs": {"train": train}}))
    return _bounded_smtrain(tmp_path, ["local", str(spec), "--run-dir", str(tmp_path / "run")], job)


def test_a_gzip_pipe_channel_over_plain_files_is_refused_before_the_run(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a,b\n" * 10)
    result = _local_with_input(tmp_path, {"uri": str(data), "input_mode": "Pipe", "compression": "Gzip"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{data / 'rows.csv'} is not gzip data" in result.stderr and "Traceback" not in result.stderr


def test_a_channel_folder_nested_deeper_than_any_s3_key_is_refused_before_the_run(tmp_path):
    """Copying a local channel walks it recursively: 1,200 folders deep it died with a RecursionError."""
    with nested_folders(tmp_path / "data") as data:
        result = _local_with_input(tmp_path, str(data))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "input train: " in result.stderr and "nests folders more than 512 deep (a/...)" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()


COPY_LIMIT_BYTES = 16 << 20
"""Every copy below runs with its file size limited to this: without the refusal, /dev/zero filled the disk."""


def _bounded() -> None:
    """A child's writes past COPY_LIMIT_BYTES fail with EFBIG (a full disk fails them with ENOSPC)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (COPY_LIMIT_BYTES, COPY_LIMIT_BYTES))


BOUNDED_SMTRAIN = f"""
import resource, runpy, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({COPY_LIMIT_BYTES}, {COPY_LIMIT_BYTES}))
runpy.run_module("orchestrator", run_name="__main__", alter_sys=True)
"""


def _bounded_smtrain(tmp_path: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`python -m orchestrator ARGS` in `cwd`, bounded as `_bounded` bounds a child, in a process forked from
    the CLI's warm interpreter (tests/support/forked.py, which takes no preexec_fn): 0.5 CPU-s less a run."""
    program = tmp_path / "bounded_smtrain.py"
    program.write_text(BOUNDED_SMTRAIN)
    return run_forked(str(program), args, SMTRAIN_PRELOAD, cwd=cwd, timeout=300)


COPY = """
import sys
from pathlib import Path
from orchestrator.emulator.preparing.channels import copy_tree
try:
    copy_tree(Path(sys.argv[1]), Path(sys.argv[2]), lambda directory, names: set())
except Exception as error:
    print(type(error).__name__, error)
"""


SPECIAL_ENTRIES = ["link to /dev/zero", "link to a file of /proc", "fifo", "socket"]
NO_OBJECT_HOLDS_THAT = "SageMaker copies a channel from S3 objects, and no object holds that"


def _special_entry(data: Path, kind: str) -> str:
    """Makes `data/held` an entry no S3 object can hold; returns what the refusal calls it."""
    if kind == "link to /dev/zero":
        (data / "held").symlink_to("/dev/zero")
        return "a link to /dev/zero, a character device"
    if kind == "link to a file of /proc":
        (data / "held").symlink_to("/proc/version")
        return "a link to /proc/version, on the kernel's proc file system"
    if kind == "fifo":
        os.mkfifo(data / "held")
        return "a named pipe (FIFO)"
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(data / "held"))
    listening.close()
    return "a socket"


@pytest.mark.parametrize("kind", SPECIAL_ENTRIES)
def test_a_channel_entry_no_s3_object_can_hold_is_refused_by_name_before_it_is_read(tmp_path, kind):
    """A link to /dev/zero was copied until the disk was full, one to /proc/kmsg waited for the kernel's next
    message forever (a file of /proc stands for it here), and a FIFO or socket inside the channel was left out
    without a word. A channel on SageMaker is copied from S3 objects: it never holds any of them."""
    if not Path("/dev/zero").is_char_device() or not Path("/proc/version").is_file():
        pytest.skip("no /dev or /proc on this machine")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("1,2\n")
    what = _special_entry(data, kind)
    copy = tmp_path / "copy"
    result = subprocess.run([sys.executable, "-c", COPY, str(data), str(copy)], capture_output=True, text=True,
                            timeout=120, preexec_fn=_bounded, check=False)
    assert result.stdout.startswith(f"NotChannelData {data / 'held'} is {what}"), result.stdout + result.stderr
    assert not os.path.lexists(copy / "held")


def _local_with_dev_zero(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`smtrain local` with a channel that is, or holds, a link `zero` to /dev/zero; returns the run and the link."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("1,2\n")
    (data / "zero").symlink_to("/dev/zero")
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text("print('ran')\n")
    spec = job / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "zero", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    channel = data / "zero" if how == "the channel itself" else data
    link_inputs = ["--link-inputs"] if how == "--link-inputs" else []
    result = _bounded_smtrain(tmp_path, ["local", str(spec), "--input", f"train={channel}", "--run-dir",
                                         str(tmp_path / "run"), *link_inputs], job)
    return result, data / "zero"


@pytest.mark.parametrize("how", ["a link in the channel folder", "--link-inputs"])
def test_smtrain_local_refuses_a_link_to_dev_zero_in_a_channel_in_one_line_naming_it(tmp_path, how):
    """A link to /dev/zero in a channel folder (copied, or copied by --link-inputs across file systems) filled the
    disk: now one ChannelError naming it, with what to do."""
    if not Path("/dev/zero").is_char_device():
        pytest.skip("no /dev/zero on this machine")
    result, zero = _local_with_dev_zero(tmp_path, how)
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    assert f"ChannelError: copying channel train from {zero.parent} into algo-1's " in output
    assert f"was refused: {zero} is a link to /dev/zero, a character device: SageMaker copies a channel" in output
    assert f"To fix: remove {zero} from the channel's folder, then run again" in output


def test_smtrain_local_refuses_a_channel_that_is_dev_zero_before_the_run(tmp_path):
    """`--input train=<a link to /dev/zero>` filled the disk: now refused before anything is written."""
    if not Path("/dev/zero").is_char_device():
        pytest.skip("no /dev/zero on this machine")
    result, _ = _local_with_dev_zero(tmp_path, "the channel itself")
    output = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in output, output
    assert "input train: /dev/zero is a character device: SageMaker copies a channel from S3" in output
    assert "To fix: pass --input train=<a folder of files>" in output and not (tmp_path / "run").exists()


def _channel_with(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A channel folder of one file and `held`, an entry of `kind`; returns it and what the refusal calls `held`."""
    if not Path("/dev/zero").is_char_device() or not Path("/proc/version").is_file():
        pytest.skip("no /dev or /proc on this machine")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("1,2\n")
    return data, _special_entry(data, kind)


@pytest.mark.parametrize("kind", SPECIAL_ENTRIES)
def test_the_objects_a_share_deals_out_and_a_pipe_carries_refuse_what_no_s3_object_holds(tmp_path, kind):
    """`objects` gave ShardedByS3Key and Pipe mode a link to a file of /proc (a link to /proc/kmsg hung the Pipe
    feeder) and left out a FIFO, socket or link to /dev/zero without a word, where a full copy refuses each."""
    data, what = _channel_with(tmp_path, kind)
    with pytest.raises(NotChannelData, match=f"^{re.escape(str(data / 'held'))} is {re.escape(what)}"):
        objects(data)


def test_the_objects_leave_out_a_run_directory_s_fifos_and_a_link_leading_nowhere(tmp_path):
    """A run directory inside the channel (`inputs: .`) holds its Pipe FIFOs while it runs: not the channel's."""
    data = tmp_path / "data"
    run = data / "runs" / "earlier"
    run.mkdir(parents=True)
    (run / RUN_MARKER_FILE).write_text("")
    os.mkfifo(run / "train_0")
    (data / "a.csv").write_text("1,2\n")
    (data / "dangling").symlink_to(tmp_path / "missing")
    assert [(item.key, item.file) for item in objects(data)] == [("a.csv", data / "a.csv")]


@pytest.mark.parametrize(("kind", "compression"), [("link to a file of /proc", "Gzip"),
                                                   ("link to a file of /proc", None), ("link to /dev/zero", None),
                                                   ("fifo", None)])
def test_smtrain_local_refuses_a_pipe_channel_holding_what_no_s3_object_holds_before_the_run(tmp_path, kind,
                                                                                               compression):
    """A Pipe channel's files are read by its Gzip check before the run and by its feeder during it: a link to
    /proc/kmsg hung either (a file of /proc stands for it here); a FIFO or a link to /dev/zero was left out."""
    data, what = _channel_with(tmp_path, kind)
    channel = {"uri": str(data), "input_mode": "Pipe", **({"compression": compression} if compression else {})}
    result = _local_with_input(tmp_path, channel)
    output = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in output, output
    assert f"input train: {data / 'held'} is {what}" in output and NO_OBJECT_HOLDS_THAT in output
    assert f"To fix: remove {data / 'held'} from the channel's folder, then run again" in output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("kind", ["fifo", "socket", "link to /dev/zero"])
def test_smtrain_local_refuses_a_sharded_channel_holding_what_no_s3_object_holds_as_a_full_copy_does(tmp_path, kind):
    """A ShardedByS3Key share left out a FIFO, socket or link to /dev/zero without a word, where a full copy of the
    same folder refuses it: now the same ChannelError, in the same words."""
    data, what = _channel_with(tmp_path, kind)
    result = _local_with_input(tmp_path, {"uri": str(data), "distribution": "ShardedByS3Key"}, hosts=2)
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    assert f"ChannelError: copying channel train from {data} into algo-1's " in output
    assert f"was refused: {data / 'held'} is {what}" in output and NO_OBJECT_HOLDS_THAT in output
    assert f"To fix: remove {data / 'held'} from the channel's folder, then run again" in output


def _linked_channel(tmp_path: Path) -> tuple[Path, list[str]]:
    """A channel whose folder holds a link to a normal folder outside it (which links back to that folder: a loop),
    and a link to that folder of its own; with the keys `aws s3 sync` of it would upload (it follows links), in
    order."""
    outside = tmp_path / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / "x.csv").write_text("x\n")
    (outside / "deeper" / "y.csv").write_text("y\n")
    data = tmp_path / "data"
    (data / "nested").mkdir(parents=True)
    (data / "a.csv").write_text("a\n")
    (data / "nested" / "b.csv").write_text("b\n")
    (data / "nested" / "linked").symlink_to(outside)
    (data / "again").symlink_to("nested")
    (outside / "back").symlink_to(data / "nested")  # the loop: nested/linked/back/linked/back/...
    return data, ["a.csv", "again/b.csv", "again/linked/deeper/y.csv", "again/linked/x.csv", "nested/b.csv",
                  "nested/linked/deeper/y.csv", "nested/linked/x.csv"]


def _request(data: Path) -> dict:
    channels = {"full": ("File", "FullyReplicated"), "sharded": ("File", "ShardedByS3Key"),
                "piped": ("Pipe", "FullyReplicated"), "piped_shards": ("Pipe", "ShardedByS3Key")}
    return {"TrainingJobName": "links", "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2},
            "HyperParameters": {}, "StoppingCondition": {"MaxRuntimeInSeconds": 60},
            "InputDataConfig": [{"ChannelName": name, "InputMode": mode, "DataSource": {"S3DataSource": {
                "S3Uri": str(data), "S3DataType": "S3Prefix", "S3DataDistributionType": distribution}}}
                for name, (mode, distribution) in channels.items()]}


def _seen(folder: Path) -> list[str]:
    """Every file a job reading its channel folder finds (through the links the copy keeps), as keys."""
    return sorted(Path(root, name).relative_to(folder).as_posix()
                  for root, _, names in os.walk(folder, followlinks=True) for name in names)


def _fed(channel) -> bytes:
    """What one epoch of a host's Pipe-mode FIFO carries."""
    with PipeFeeders([channel]), open(channel.fifo(0), "rb") as pipe:
        return pipe.read()


@pytest.mark.parametrize("link_inputs", [False, True], ids=["copied", "link-inputs"])
def test_every_mode_gives_the_hosts_a_linked_folders_files_once_under_the_keys_s3_sync_gives(tmp_path, link_inputs):
    """A ShardedByS3Key share and a Pipe feed left out a linked folder (and --link-inputs did too), while the full
    copy held it: the same folder gave the job other files in another mode. On SageMaker the channel is what
    `aws s3 sync` uploaded, links followed: every mode now deals or feeds that one listing."""
    data, keys = _linked_channel(tmp_path)
    job = ContainerJob.from_request(_request(data))
    layout = new_layout(tmp_path / "run", job)
    prepare(layout, job, HostInputs(package(_source(tmp_path)), tmp_path / "run/source/sourcedir.tar.gz",
                                    {channel.name: data for channel in job.channels},
                                    [(job.groups[0], ["algo-1", "algo-2"])], {"algo-1": {}, "algo-2": {}},
                                    link_inputs=link_inputs))
    for host in layout.hosts:
        assert _seen(host.data_dir / "full") == keys  # FullyReplicated: every host all of them
    shares = [_seen(host.data_dir / "sharded") for host in layout.hosts]
    assert sorted(shares[0] + shares[1]) == keys  # together all of them, each once
    assert shares == [keys[0::2], keys[1::2]]  # dealt round-robin in key order
    contents = {key: (data / key).read_bytes() for key in keys}
    feeds = {(channel.name, channel.data_dir.parent.parent.name): _fed(channel)
             for channel in pipe_channels(layout, job, {channel.name: data for channel in job.channels})}
    for host in ("algo-1", "algo-2"):
        assert feeds["piped", host] == b"".join(contents[key] for key in keys)  # each file once, in key order
    assert feeds["piped_shards", "algo-1"] + feeds["piped_shards", "algo-2"] == b"".join(
        contents[key] for key in keys[0::2] + keys[1::2])
    assert [item.key for item in objects(data)] == keys  # the one listing, in S3's key order


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('ran')\n")
    return source


def test_a_pipe_channel_holding_a_folder_this_user_cannot_list_is_refused_in_words(tmp_path, monkeypatch):
    """The one listing now reads every folder a Pipe channel's links lead to before the run: a folder this user
    cannot list (root reads them all, so the kernel's refusal is stood in for) is said, not a traceback."""
    data = tmp_path / "data"
    (data / "private").mkdir(parents=True)
    (data / "a.csv").write_text("1,2\n")
    listing = os.scandir

    def refusing(path):
        if Path(path) == data / "private":
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path)

    monkeypatch.setattr(os, "scandir", refusing)
    with pytest.raises(SpecError) as refused:
        _refuse_pipe_entries("train", data)
    assert f"input train: {data / 'private'} cannot be read: Permission denied" in str(refused.value)
