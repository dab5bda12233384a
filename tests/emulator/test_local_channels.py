"""`smtrain local` delivers channels as SageMaker does: ShardedByS3Key gives each host its own disjoint share,
Pipe mode gives the script one FIFO per epoch (`<channel>_<epoch>`), and with instance groups each group's hosts
get their own environment (as the training toolkit derives it) and only the channels assigned to their group.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.preparing.channels import PipeChannel, PipeFeeders
from orchestrator.specs.loader import load

SEEN_FILES = """import json, os, pathlib
host = os.environ["SM_CURRENT_HOST"]
seen = {}
for name in json.loads(os.environ["SM_CHANNELS"]):
    root = pathlib.Path(os.environ["SM_CHANNEL_" + name.upper()])
    seen[name] = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
keys = ["SM_CURRENT_INSTANCE_GROUP", "SM_CURRENT_INSTANCE_GROUP_HOSTS", "SM_INSTANCE_GROUPS", "SM_IS_HETERO",
        "SM_CURRENT_INSTANCE_TYPE", "SM_CHANNELS", "SM_HOSTS", "SM_NUM_GPUS"]
data = sorted(p.name for p in pathlib.Path(os.environ["SM_INPUT_DIR"], "data").iterdir())
record = {"files": seen, "env": {key: os.environ.get(key) for key in keys}, "data_dir": data,
          "groups": json.loads(os.environ["SM_TRAINING_ENV"])["instance_groups_dict"]}
pathlib.Path(os.environ["SM_MODEL_DIR"], host + ".json").write_text(json.dumps(record))
"""

PIPE_READER = """import hashlib, json, os, pathlib
reads = {}
for channel, epochs in (("train", 2), ("zipped", 1)):
    for epoch in range(epochs):
        path = os.environ["SM_CHANNEL_" + channel.upper()] + "_" + str(epoch)
        with open(path, "rb") as pipe:  # a FIFO: the read ends when SageMaker (here smtrain) has sent the epoch
            data = pipe.read()
        reads[f"{channel}_{epoch}"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
print("epochs read", sorted(reads))
pathlib.Path(os.environ["SM_MODEL_DIR"], "reads.json").write_text(json.dumps(reads))
"""


def _spec(tmp_path: Path, script: str, **fields) -> Path:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(script)
    spec = {"name": "channels", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "metrics": [], "max_run_seconds": 600, **fields}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _objects(root: Path, count: int) -> list[str]:
    keys = [f"part-{index:02d}.csv" if index % 3 else f"nested/part-{index:02d}.csv" for index in range(count)]
    for key in keys:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(f"{key}\n")
    return keys


def _records(run_dir: Path, hosts: list[str]) -> dict[str, dict]:
    # model.tar.gz merges the hosts' model dirs; each host's own dir is still in the run directory
    return {host: json.loads((run_dir / host / "model" / f"{host}.json").read_text()) for host in hosts}


@pytest.mark.slow
def test_sharded_by_s3_key_gives_three_hosts_disjoint_shares_that_cover_the_channel(tmp_path):
    data = tmp_path / "data"
    keys = _objects(data, 10)
    spec = _spec(tmp_path, SEEN_FILES, instance={"type": "ml.c5.2xlarge", "count": 3},
                 inputs={"train": {"uri": str(data), "distribution": "ShardedByS3Key"},
                         "full": str(data)})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    records = _records(result.run_dir, ["algo-1", "algo-2", "algo-3"])
    shares = [set(records[host]["files"]["train"]) for host in ("algo-1", "algo-2", "algo-3")]
    assert all(shares), shares  # 10 objects over 3 hosts: 4, 3, 3
    assert sorted(len(share) for share in shares) == [3, 3, 4]
    assert not (shares[0] & shares[1] or shares[0] & shares[2] or shares[1] & shares[2]), "shares overlap"
    assert set().union(*shares) == set(keys), "the shares do not cover the channel"
    assert all(sorted(records[host]["files"]["full"]) == sorted(keys) for host in records)  # FullyReplicated
    config = json.loads((result.run_dir / "algo-1" / "input" / "config" / "inputdataconfig.json").read_text())
    assert config["train"]["S3DistributionType"] == "ShardedByS3Key"
    assert config["full"]["S3DistributionType"] == "FullyReplicated"


@pytest.mark.slow
def test_a_host_that_gets_no_file_of_a_sharded_channel_is_named_at_the_start(tmp_path):
    """One file for two hosts left algo-2 an empty directory, as SageMaker does, with no word: the script then
    failed with its own error."""
    data = tmp_path / "data"
    keys = _objects(data, 1)
    spec = _spec(tmp_path, SEEN_FILES, instance={"type": "ml.c5.2xlarge", "count": 2},
                 inputs={"train": {"uri": str(data), "distribution": "ShardedByS3Key"}})
    result = CliRunner().invoke(main, ["local", str(spec), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    records = _records(tmp_path / "run", ["algo-1", "algo-2"])
    assert records["algo-1"]["files"]["train"] == keys and records["algo-2"]["files"]["train"] == []
    assert ("channel train is ShardedByS3Key: algo-2 gets no file (an empty directory): the channel has 1 file "
            "for 2 instances") in " ".join(result.output.split())


@pytest.mark.slow
def test_pipe_mode_script_reads_its_fifo_for_two_epochs(tmp_path):
    import hashlib

    data = tmp_path / "stream"
    keys = _objects(data, 4)
    expected = b"".join((data / key).read_bytes() for key in sorted(keys))
    zipped = tmp_path / "zipped"
    zipped.mkdir()
    plain = b"a,b\n" * 1000
    (zipped / "rows.csv.gz").write_bytes(gzip.compress(plain))
    spec = _spec(tmp_path, PIPE_READER, instance={"type": "ml.c5.2xlarge", "count": 1},
                 inputs={"train": {"uri": str(data), "input_mode": "Pipe"},
                         "zipped": {"uri": str(zipped), "input_mode": "Pipe", "compression": "Gzip"}})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    reads = json.loads((result.run_dir / "algo-1" / "model" / "reads.json").read_text())
    digest = hashlib.sha256(expected).hexdigest()
    assert reads["train_0"]["sha256"] == digest and reads["train_1"]["sha256"] == digest  # every epoch, in key order
    assert reads["train_0"]["bytes"] == len(expected)
    assert reads["zipped_0"]["sha256"] == hashlib.sha256(plain).hexdigest()  # Gzip: decompressed on the way
    host_data = result.run_dir / "algo-1" / "input" / "data"
    assert not (host_data / "train").exists()  # Pipe mode: no directory, only FIFOs
    config = json.loads((result.run_dir / "algo-1" / "input" / "config" / "inputdataconfig.json").read_text())
    assert config["train"]["TrainingInputMode"] == "Pipe"


def test_a_script_that_closes_an_epoch_early_finds_the_next_fifo_at_once(tmp_path):
    # SageMaker's own readers wait for `<channel>_<epoch>` to appear; the emulator makes it before the previous
    # epoch can be opened, so a script that closes an epoch early and opens the next one at once never races it.
    item = tmp_path / "big.bin"
    item.write_bytes(b"x" * (4 << 20))  # far more than a pipe's buffer: the feeder is mid-write at each close
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    channel = PipeChannel(data_dir=data_dir, name="train", items=(item,), gzip=False)
    with PipeFeeders([channel]):
        for epoch in range(60):
            with open(channel.fifo(epoch), "rb") as pipe:  # FileNotFoundError when the next FIFO came late
                assert pipe.read(epoch % 2) == b"x" * (epoch % 2)  # closed at once, or after one byte
    assert not list(data_dir.iterdir())  # the run over, no FIFO is left behind


@pytest.mark.slow
def test_instance_groups_see_their_own_environment_and_only_their_channels(tmp_path):
    raw, shards = tmp_path / "raw", tmp_path / "shards"
    raw_keys, shard_keys = _objects(raw, 2), _objects(shards, 4)
    spec = _spec(tmp_path, SEEN_FILES,
                 instance={"groups": [{"name": "data", "type": "ml.c5.2xlarge", "count": 1},
                                      {"name": "train", "type": "ml.c5.xlarge", "count": 2}]},
                 inputs={"raw": {"uri": str(raw), "instance_groups": ["data"]},
                         "shards": {"uri": str(shards), "distribution": "ShardedByS3Key",
                                    "instance_groups": ["train"]}})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    records = _records(result.run_dir, ["algo-1", "algo-2", "algo-3"])
    data_host = records["algo-1"]
    assert data_host["env"]["SM_CURRENT_INSTANCE_GROUP"] == "data"
    assert data_host["env"]["SM_CURRENT_INSTANCE_GROUP_HOSTS"] == '["algo-1"]'
    assert data_host["env"]["SM_CURRENT_INSTANCE_TYPE"] == "ml.c5.2xlarge"
    assert data_host["env"]["SM_CHANNELS"] == '["raw"]' and data_host["data_dir"] == ["raw"]
    assert sorted(data_host["files"]["raw"]) == sorted(raw_keys)
    for host in ("algo-2", "algo-3"):
        env = records[host]["env"]
        assert env["SM_CURRENT_INSTANCE_GROUP"] == "train" and env["SM_CURRENT_INSTANCE_TYPE"] == "ml.c5.xlarge"
        assert env["SM_CURRENT_INSTANCE_GROUP_HOSTS"] == '["algo-2","algo-3"]'
        assert env["SM_CHANNELS"] == '["shards"]' and records[host]["data_dir"] == ["shards"]
    for record in records.values():
        assert record["env"]["SM_IS_HETERO"] == "true"
        assert record["env"]["SM_INSTANCE_GROUPS"] == '["data","train"]'
        assert record["env"]["SM_HOSTS"] == '["algo-1","algo-2","algo-3"]'
        assert record["groups"] == {
            "data": {"instance_group_name": "data", "instance_type": "ml.c5.2xlarge", "hosts": ["algo-1"]},
            "train": {"instance_group_name": "train", "instance_type": "ml.c5.xlarge", "hosts": ["algo-2", "algo-3"]}}
    train_shares = [set(records[host]["files"]["shards"]) for host in ("algo-2", "algo-3")]
    assert not train_shares[0] & train_shares[1] and train_shares[0] | train_shares[1] == set(shard_keys)
    status = CliRunner().invoke(main, ["status", str(result.run_dir)])  # what `smtrain status` shows of the groups
    assert status.exit_code == 0, status.output
    assert "3 in instance groups" in status.output
    assert "data 1 x ml.c5.2xlarge, train 2 x ml.c5.xlarge" in status.output


GROUP_RANKS = """import json, os, pathlib, socket
import torch
host = socket.gethostname()  # algo-N in every process (mpirun passes every rank the master's SM_* variables)
rank = os.environ.get("OMPI_COMM_WORLD_RANK")
record = {"group": os.environ["SM_CURRENT_INSTANCE_GROUP"], "rank": rank, "cuda": torch.cuda.is_available(),
          "gpus": os.environ["SM_NUM_GPUS"], "master": json.loads(os.environ["SM_TRAINING_ENV"])["master_hostname"]}
pathlib.Path(os.environ["OUT"], f"{host}-{rank}.json").write_text(json.dumps(record))
"""


@pytest.mark.slow
def test_mpirun_spans_only_the_training_group_and_only_it_sees_gpus(tmp_path):
    spec = _spec(tmp_path, GROUP_RANKS,
                 instance={"groups": [{"name": "data", "type": "ml.c5.2xlarge", "count": 1},
                                      {"name": "train", "type": "ml.g5.xlarge", "count": 2}]},
                 distribution={"mode": "mpi", "instance_groups": ["train"], "processes_per_host": 1},
                 environment={"OUT": str(tmp_path / "out")})
    (tmp_path / "out").mkdir()
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    records = {path.stem: json.loads(path.read_text()) for path in (tmp_path / "out").glob("*.json")}
    assert len(records) == 3, records
    # the data host runs the script once, as a plain process, on its CPU instance
    assert records["algo-1-None"] == {"group": "data", "rank": None, "cuda": False, "gpus": "0", "master": "algo-2"}
    # mpirun's two ranks live on the training group's hosts, which have the g5's GPU (the CPU stand-in here)
    trained = {name: record for name, record in records.items() if record["group"] == "train"}
    assert sorted(record["rank"] for record in trained.values()) == ["0", "1"]
    assert all(record["cuda"] and record["gpus"] == "1" and record["master"] == "algo-2" for record in trained.values())
    assert {name.rsplit("-", 1)[0] for name in trained} == {"algo-2", "algo-3"}
