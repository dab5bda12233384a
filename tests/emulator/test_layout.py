"""The run directory's rules, without running anything: container paths placed per host, code extracted only into
an empty code directory (as the toolkit does), artifacts written whole."""

from __future__ import annotations

import tarfile

import pytest

from orchestrator.emulator.instances.container import ContainerJob, Host
from orchestrator.emulator.preparing.layout import (
    HostInputs,
    RunLayout,
    checkpoint_container_path,
    merge_artifacts,
    new_layout,
    open_run_directory,
    prepare,
    release_directory,
    upload_checkpoints,
    write_result,
)
from orchestrator.errors import SpecError
from orchestrator.planning.packaging import package

REQUEST = {
    "TrainingJobName": "layout-job", "AlgorithmSpecification": {"TrainingInputMode": "File"},
    "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2},
    "HyperParameters": {"sagemaker_program": '"train.py"'}, "StoppingCondition": {"MaxRuntimeInSeconds": 60},
    "CheckpointConfig": {"S3Uri": "s3://b/c/", "LocalPath": "/checkpoints/run"},
}


def test_container_paths_are_placed_inside_the_run(tmp_path):
    layout = new_layout(tmp_path / "run", ContainerJob.from_request(REQUEST))
    host = layout.hosts[1]
    assert layout.rewrite(host, "/opt/ml/model/best") == str(tmp_path / "run/algo-2/model/best")
    assert layout.rewrite(host, "/checkpoints/run/epoch-3") == str(tmp_path / "run/container-paths/algo-2/checkpoints/"
                                                                              "run/epoch-3")
    assert layout.rewrite(host, "/opt/mlx") == "/opt/mlx" and layout.rewrite(host, "/checkpoints/runs") == "/checkpoints/runs"


@pytest.mark.parametrize("path", ["checkpoints", "/", "/a/../.."])
def test_checkpoint_paths_the_emulator_cannot_place_are_refused(path):
    with pytest.raises(SpecError):
        checkpoint_container_path(path)


def test_a_checkpoint_path_cannot_climb_out_of_the_container():
    assert checkpoint_container_path("/a/../../etc/ckpt/") == "/etc/ckpt"


def test_code_is_extracted_only_into_an_empty_code_directory(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('from the tarball')\n")
    job = ContainerJob.from_request(REQUEST)
    layout = new_layout(tmp_path / "run", job)
    (layout.hosts[0].code_dir).mkdir(parents=True)
    (layout.hosts[0].code_dir / "baked.py").write_text("print('already in the image')\n")
    prepare(layout, job, HostInputs(package(source), tmp_path / "run/source/x/sourcedir.tar.gz", {},
                                    [(job.groups[0], ["algo-1", "algo-2"])],
                                    {host.name: job.hyperparameters for host in layout.hosts}))
    assert sorted(path.name for path in layout.hosts[0].code_dir.iterdir()) == ["baked.py"]
    assert sorted(path.name for path in layout.hosts[1].code_dir.iterdir()) == ["train.py"]


def test_artifacts_merge_hosts_and_replace_the_old_archive_whole(tmp_path):
    hosts = tuple(Host(f"algo-{index}", tmp_path / f"algo-{index}") for index in (1, 2))
    for index, host in enumerate(hosts):
        host.model_dir.mkdir(parents=True)
        (host.model_dir / "shared.txt").write_text(f"from {host.name}\n")
        (host.model_dir / f"only-{index}.txt").write_text("x")
    (tmp_path / "model.tar.gz").write_bytes(b"an older archive")
    model, _ = merge_artifacts(RunLayout(tmp_path, hosts, None))
    with tarfile.open(model) as tar:
        assert sorted(tar.getnames()) == ["only-0.txt", "only-1.txt", "shared.txt"]
        assert tar.extractfile("shared.txt").read() == b"from algo-2\n"  # a later host overwrites a clash
    assert not list(tmp_path.glob(".*.partial"))


@pytest.mark.parametrize("local_path", ["/opt/ml/checkpoints", "/checkpoints/run"])
def test_a_link_the_job_made_to_its_checkpoint_is_uploaded_as_the_host_sees_it(tmp_path, local_path):
    """`latest -> /opt/ml/checkpoints/step-3` names the host's own folder, which outside the host's namespace is no
    /opt/ml: the upload (at the end of the run, or at a spot interruption) copies what the job saw there, and skips a
    link to nothing, instead of failing smtrain with a traceback."""
    job = ContainerJob.from_request({**REQUEST, "CheckpointConfig": {"S3Uri": "s3://b/c/", "LocalPath": local_path}})
    layout = new_layout(tmp_path / "run", job)
    saved = layout.host_path(layout.hosts[1], local_path)
    (saved / "step-3").mkdir(parents=True)
    (saved / "step-3" / "state.pt").write_text("step 3")
    (saved / "latest").symlink_to(f"{local_path}/step-3")
    (saved / "latest.pt").symlink_to(f"{local_path}/step-3/state.pt")
    (saved / "gone").symlink_to(f"{local_path}/step-2")
    upload_checkpoints(layout)
    uploaded = layout.s3_checkpoints
    assert sorted(path.name for path in uploaded.iterdir()) == ["latest", "latest.pt", "step-3"]
    assert (uploaded / "latest" / "state.pt").read_text() == (uploaded / "latest.pt").read_text() == "step 3"
    assert not any(path.is_symlink() for path in uploaded.rglob("*"))


@pytest.mark.parametrize("finished", [False, True])
def test_a_rerun_keeps_the_checkpoints_of_a_run_that_ended_without_a_result(tmp_path, finished):
    """smtrain killed (SIGKILL, the OOM killer) never uploads at the end: SageMaker would have uploaded the
    checkpoints as they were written, so the rerun's reuse uploads them before it clears the hosts. A run that ended
    with a result uploaded what it meant to (and the user may have emptied the prefix since)."""
    root = tmp_path / "run"
    layout = new_layout(root, ContainerJob.from_request(REQUEST))
    open_run_directory(root)
    saved = layout.host_path(layout.hosts[0], "/checkpoints/run")
    saved.mkdir(parents=True)
    (saved / "checkpoint-5.pt").write_text("step 5")
    if finished:
        write_result(root, {"status": "Completed"})
    release_directory(root)

    open_run_directory(root, layout)
    release_directory(root)

    assert not saved.exists()
    assert (layout.s3_checkpoints / "checkpoint-5.pt").is_file() is not finished
