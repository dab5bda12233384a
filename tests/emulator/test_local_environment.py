"""What each emulated process really sees: environment, argv, cwd and config files, per mode."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.emulator.instances.standin import STANDIN_DIR
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.preparing.deviations import DEVIATIONS
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

HYPERPARAMETERS = {"epochs": 1, "backend": "gloo", "learning-rate": 0.001, "use-cuda": True, "layers": [64, 32]}


def _shell_keeps_hyphenated_names() -> bool:
    probe = subprocess.run(["/bin/sh", "-c", "env"], env={"SM_HP_A-B": "1", "PATH": os.environ["PATH"]},
                           capture_output=True, text=True, check=True)
    return "SM_HP_A-B=1" in probe.stdout


def _seen(run_dir: Path) -> dict[str, dict]:
    return {path.stem.removeprefix("seen-"): json.loads(path.read_text())
            for path in run_dir.glob("algo-*/output/data/seen-*.json")}


def test_mode_none_environment_config_files_and_argv(make_spec, tmp_path, monkeypatch, notice_recorder,
                                                     host_seen_at):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-west-2")  # this shell's region and default region, not the job's
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-0.csv").write_text("1,2,3\n")
    spec = make_spec("env_dump.py", hyperparameters=HYPERPARAMETERS, inputs={"training": str(data)},
                     region="eu-west-1")
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"), notice_recorder)
    assert result.status == "Completed", result.failure_reason
    # each once, in order
    assert [text for text in notice_recorder.notices if text in DEVIATIONS] == list(DEVIATIONS)
    seen = _seen(result.run_dir)
    assert sorted(seen) == ["algo-1-0", "algo-2-0"]
    for name in ("algo-1", "algo-2"):
        host, seen_at = result.run_dir / name, host_seen_at(result.run_dir, name)
        env, argv, cwd = seen[f"{name}-0"]["env"], seen[f"{name}-0"]["argv"], seen[f"{name}-0"]["cwd"]
        assert env["SM_HOSTS"] == '["algo-1","algo-2"]'
        assert env["SM_CURRENT_HOST"] == name and env["CURRENT_HOST"] == name and seen[f"{name}-0"]["hostname"] == name
        # The toolkit sets none; the two emulated hosts share this machine's cores (launch.thread_share).
        assert env["OMP_NUM_THREADS"] == str(max(1, len(os.sched_getaffinity(0)) // 2))
        assert json.loads(env["SM_TRAINING_ENV"])["topology"] == []
        assert env["SM_CHANNELS"] == '["training"]'
        assert env["SM_CHANNEL_TRAINING"] == str(seen_at / "input" / "data" / "training")
        assert (host / "input" / "data" / "training" / "part-0.csv").read_text() == "1,2,3\n"
        assert env["SM_MODEL_DIR"] == str(seen_at / "model")
        assert env["SM_OUTPUT_DIR"] == str(seen_at / "output")
        assert env["SM_HPS"] == '{"backend":"gloo","epochs":1,"layers":[64,32],"learning-rate":0.001,"use-cuda":true}'
        assert env["SM_HP_EPOCHS"] == "1" and env["SM_HP_LAYERS"] == "[64,32]"
        # The toolkit starts the script through /bin/sh, and dash (Debian's and Ubuntu's sh) drops variables
        # whose names are not identifiers: SM_HP_LEARNING-RATE reaches the script only if this sh keeps it.
        expected = "0.001" if _shell_keeps_hyphenated_names() else None
        assert env.get("SM_HP_LEARNING-RATE") == expected
        assert env["SM_FRAMEWORK_PARAMS"] == "{}" and env["SM_DISTRIBUTION_INSTANCE_GROUPS"] == "[]"
        assert env["SM_CURRENT_INSTANCE_TYPE"] == "ml.c5.2xlarge" and env["SM_NUM_GPUS"] == "0"
        assert env["SM_USER_ENTRY_POINT"] == "env_dump.py" and env["SM_MODULE_NAME"] == "env_dump"
        assert env["TRAINING_JOB_NAME"] == result.job_name
        # SageMaker sets the job's region as AWS_REGION and no AWS_DEFAULT_REGION (docs/sagemaker-contract.md §4)
        assert env["AWS_REGION"] == "eu-west-1" and "AWS_DEFAULT_REGION" not in env
        assert env["TRAINING_JOB_ARN"] == f"arn:aws:sagemaker:eu-west-1:000000000000:training-job/{result.job_name}"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"].isdigit()
        assert env.get("SAGEMAKER_BASE_DIR") == (None if seen_at != host else str(host))  # unset on SageMaker
        assert json.loads(env["SM_TRAINING_ENV"])["master_hostname"] == "algo-1"
        assert cwd == str(seen_at / "code")
        # The toolkit's shell join splits the list value, exactly as on SageMaker (contract §5).
        assert argv == ["--backend", "gloo", "--epochs", "1", "--layers", "[64,", "32]", "--learning-rate", "0.001",
                        "--use-cuda", "True"]
        config = host / "input" / "config"
        assert json.loads((config / "resourceconfig.json").read_text()) == {
            "current_host": name, "current_instance_type": "ml.c5.2xlarge", "current_group_name": "homogeneousCluster",
            "hosts": ["algo-1", "algo-2"], "network_interface_name": "eth0",
            "instance_groups": [{"instance_group_name": "homogeneousCluster", "instance_type": "ml.c5.2xlarge",
                                 "hosts": ["algo-1", "algo-2"]}]}
        assert json.loads((config / "inputdataconfig.json").read_text()) == {
            "training": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated",
                         "RecordWrapperType": "None"}}
        hyperparameters = json.loads((config / "hyperparameters.json").read_text())
        assert hyperparameters["layers"] == "[64, 32]" and hyperparameters["backend"] == '"gloo"'
        assert hyperparameters["sagemaker_program"] == '"env_dump.py"'
        assert (host / "output" / "success").exists()


def test_mpi_ranks_each_live_on_their_own_host(make_spec, tmp_path, host_seen_at):
    """2 hosts x 2 ranks, algo-2 first in the group: every rank sees its own host's name, /opt/ml folders and code
    directory, and (as on SageMaker) the master's SM_CURRENT_HOST; the job's own OMP_NUM_THREADS, not the share."""
    spec = make_spec("env_dump.py", mode="mpi", distribution={"mode": "mpi", "processes_per_host": 2},
                     environment={"OMP_NUM_THREADS": "3"})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", master_host="algo-2"))
    assert result.status == "Completed", result.failure_reason
    seen = {int(item["env"]["OMPI_COMM_WORLD_RANK"]): item for item in _seen(result.run_dir).values()}
    assert sorted(seen) == [0, 1, 2, 3]
    for rank, item in seen.items():
        env, host = item["env"], ("algo-2" if rank < 2 else "algo-1")
        root, seen_at = result.run_dir / host, host_seen_at(result.run_dir, host)
        assert item["hostname"] == host and env["CURRENT_HOST"] == host
        assert (root / "output" / "data" / f"seen-{host}-{rank}.json").is_file()
        assert env["SM_MODEL_DIR"] == str(seen_at / "model")
        assert env["SM_OUTPUT_DATA_DIR"] == str(seen_at / "output/data")
        assert item["cwd"] == str(seen_at / "code")
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(seen_at / "code")
        assert json.loads(env["SM_TRAINING_ENV"])["model_dir"] == str(seen_at / "model")
        # mpirun exports every SM_* variable from the master (algo-2 here), as the toolkit does.
        assert env["SM_CURRENT_HOST"] == "algo-2"
        assert env["OMPI_COMM_WORLD_SIZE"] == "4" and env["OMPI_COMM_WORLD_LOCAL_SIZE"] == "2"
        assert env["OMPI_COMM_WORLD_LOCAL_RANK"] == str(rank % 2)
        framework = json.loads(env["SM_FRAMEWORK_PARAMS"])
        assert framework["sagemaker_mpi_enabled"] is True and framework["sagemaker_mpi_num_of_processes_per_host"] == 2
        assert env["SM_DISTRIBUTION_INSTANCE_GROUPS"] == '["homogeneousCluster"]'
        assert env["SM_CURRENT_INSTANCE_GROUP_HOSTS"] == '["algo-2","algo-1"]'
        assert json.loads(env["SM_TRAINING_ENV"])["master_hostname"] == "algo-2"
        assert "RANK" not in env and "WORLD_SIZE" not in env
        assert not any(name.startswith("SMTRAIN_HOST_ENV_") for name in env)
        assert env["OMP_NUM_THREADS"] == "3"


@pytest.mark.parametrize(("mode", "hosts"), [("pytorchddp", 2), ("smddp", 3)])
def test_smdataparallel_places_ranks_by_slot_on_every_host(make_spec, tmp_path, monkeypatch, mode, hosts,
                                                           host_seen_at):
    """SMDataParallel's mpirun with the DLC's slot mapping: ranks 2k and 2k+1 on algo-(k+1), local ranks 0 and 1,
    and a run on 3 hosts finishes (plm_rsh_num_concurrent is the host count); --cpus 8 shared among the ranks."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    spec = make_spec("env_dump.py", mode=mode, count=hosts, instance="ml.p4d.24xlarge")
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", processes_per_host=2, cpus=8))
    assert result.status == "Completed", result.failure_reason
    seen = {int(item["env"]["OMPI_COMM_WORLD_RANK"]): item for item in _seen(result.run_dir).values()}
    assert sorted(seen) == list(range(2 * hosts))
    for rank, item in seen.items():
        host = f"algo-{rank // 2 + 1}"
        assert item["hostname"] == host and item["env"]["SM_CURRENT_HOST"] == host
        assert item["env"]["OMPI_COMM_WORLD_LOCAL_RANK"] == str(rank % 2)
        assert item["env"]["OMPI_COMM_WORLD_LOCAL_SIZE"] == "2"
        assert item["env"]["SM_NUM_GPUS"] == "8"  # the instance's, not this machine's
        assert item["env"]["OMP_NUM_THREADS"] == str(8 // (2 * hosts))
        assert item["cwd"] == str(host_seen_at(result.run_dir, host) / "code")


def test_torch_distributed_runs_torchrun_on_every_host(make_spec, tmp_path, monkeypatch, host_seen_at):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    spec = make_spec("env_dump.py", mode="torch_distributed", instance="ml.g5.2xlarge")
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    seen = _seen(result.run_dir)
    assert sorted(seen) == ["algo-1-0", "algo-2-1"]
    for key, item in seen.items():
        env = item["env"]
        host, rank = key.rsplit("-", 1)
        assert env["RANK"] == rank and env["WORLD_SIZE"] == "2" and env["LOCAL_RANK"] == "0"
        assert env["GROUP_RANK"] == rank and env["SM_CURRENT_HOST"] == host
        assert item["hostname"] == host and item["cwd"] == str(host_seen_at(result.run_dir, host) / "code")
        # ml.g5.2xlarge has 1 A10G, this machine none: the CPU stand-in for CUDA, first on the path.
        assert (env["SMTRAIN_GPU_STANDIN"], env["SMTRAIN_GPU_STANDIN_NAME"]) == ("1", "A10G")
        # One worker per host, so torchrun sets no thread count: each gets its share of this machine's cores.
        assert env["OMP_NUM_THREADS"] == str(max(1, len(os.sched_getaffinity(0)) // 2))
        assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(STANDIN_DIR), item["cwd"]]
        assert json.loads(env["SM_FRAMEWORK_PARAMS"]) == {"sagemaker_instance_type": "ml.g5.2xlarge",
                                                          "sagemaker_torch_distributed_enabled": True}


def test_host_order_places_the_master_and_the_ranks(make_spec, tmp_path):
    """SageMaker does not promise algo-1 first: with the group ordered algo-3, algo-1, algo-2 the master (rank 0)
    is algo-3 and ranks follow the group order, as the toolkit's mpirun --host list says."""
    from click.testing import CliRunner

    from orchestrator.cli.main import main

    spec = make_spec("env_dump.py", mode="mpi", count=3, distribution={"mode": "mpi", "processes_per_host": 1})
    run_dir = tmp_path / "run"
    outcome = CliRunner().invoke(main, ["local", str(spec), "--run-dir", str(run_dir), "--host-order", "algo-3,algo-1",
                                        "-q"])
    assert outcome.exit_code == 0, outcome.output
    seen = {int(item["env"]["OMPI_COMM_WORLD_RANK"]): item for item in _seen(run_dir).values()}
    assert {rank: item["hostname"] for rank, item in seen.items()} == {0: "algo-3", 1: "algo-1", 2: "algo-2"}
    assert all(item["env"]["SM_CURRENT_INSTANCE_GROUP_HOSTS"] == '["algo-3","algo-1","algo-2"]'
               and json.loads(item["env"]["SM_TRAINING_ENV"])["master_hostname"] == "algo-3" for item in seen.values())
