"""smtrain installed from a wheel into a fresh virtualenv that already has SageMaker SDK v3: pip keeps v3,
pulls no torch, and plan, submit, status, logs, list and `infra deploy` work there against moto's server.

What is installed, and why:
* smtrain: a wheel built from a copy of this source tree (`pip wheel --no-deps`, as a release would be; the
  copy keeps `build/` out of the checkout), then `pip install -c constraints.txt <wheel>` *with* its
  dependencies, so pip's resolver really decides what happens to the installed `sagemaker`. The constraints are
  the repository's minus the `sagemaker` pin (a v2 pin there would force the downgrade this test is about).
* SDK v3: the `sagemaker` 3.27.0 distribution and `sagemaker-core` (which provides the `sagemaker` namespace
  package), both `--no-deps`. v3's real closure is 132 distributions, about 1 GB (sdk-facts.md §1): 5 min 19 s
  to install here, far over this test's budget. What matters for the resolver is the installed `sagemaker`
  distribution at version 3.x; pip does not resolve the installed packages' own requirements again (it only
  warns that they are missing), so the outcome for `sagemaker` is the same with or without v3's closure.

Needs the package index (build isolation fetches setuptools; smtrain's dependencies are downloaded). The wheel
and the virtualenv are kept in pytest's cache directory (.pytest_cache), by the content of everything that goes
into them (the packaged sources, the constraints, the SDK v3 pins, this Python): a later run with the same
content reuses them, and any change builds and installs anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import boto3
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SDK3 = ("sagemaker==3.27.0", "sagemaker-core==2.27.0")
SPEC = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
TEMPLATE_IN_WHEEL = "orchestrator/cloud/smtrain.yaml"


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


PACKAGED = ("pyproject.toml", "README.md", "orchestrator")


def _packaged_files() -> list[Path]:
    files = [REPO / name for name in PACKAGED[:2]]
    files += [path for path in (REPO / PACKAGED[2]).rglob("*") if path.is_file() and "__pycache__" not in path.parts
              and path.suffix != ".pyc"]
    return sorted(files)


def _content_key() -> str:
    """What decides the wheel and the virtualenv: the packaged files, the constraints, the SDK pins, Python."""
    digest = hashlib.sha256(repr((SDK3, sys.version)).encode())
    for path in [*_packaged_files(), REPO / "constraints.txt"]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding the wheel (dist/) and the virtualenv (venv/), made once per content."""
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider: built for this run only
    root = cache.mkdir(f"sdk3-install-{_content_key()}") if cache else tmp_path_factory.mktemp("sdk3-install")
    if not (root / "complete").is_file():
        shutil.rmtree(root)
        root.mkdir()
        _build_wheel(root / "dist", tmp_path_factory.mktemp("source"))
        _install_beside_sdk3(root, next((root / "dist").glob("smtrain-*.whl")))
        (root / "complete").touch()
    return root


def _build_wheel(dist: Path, source: Path) -> None:
    """smtrain's wheel, built from a copy of what the sdist would hold."""
    for path in _packaged_files():
        target = source / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(source)])


def _install_beside_sdk3(root: Path, wheel: Path) -> None:
    """A fresh virtualenv with SDK v3, then smtrain installed with its dependencies."""
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "--no-deps", *SDK3])
    constraints = root / "constraints.txt"
    pins = (REPO / "constraints.txt").read_text().splitlines()
    constraints.write_text("\n".join(line for line in pins if not line.startswith("sagemaker=")) + "\n")
    _run([*pip, "-c", str(constraints), str(wheel)])


@pytest.fixture(scope="module")
def wheel(built: Path) -> Path:
    [found] = (built / "dist").glob("smtrain-*.whl")
    return found


@pytest.fixture(scope="module")
def sdk3_venv(built: Path) -> Path:
    """The virtualenv's bin/."""
    return built / "venv" / "bin"


def test_the_wheel_ships_the_cloudformation_template(wheel):
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read(TEMPLATE_IN_WHEEL).decode()
    assert shipped == (REPO / "infra" / "smtrain.yaml").read_text()


def test_installing_beside_sdk3_keeps_sdk3_and_pulls_no_sdk2_or_torch(sdk3_venv):
    probe = ("import importlib.metadata as m, importlib.util as u, json; "
             "print(json.dumps([m.version('sagemaker'), m.version('smtrain'), u.find_spec('torch') is None, "
             "u.find_spec('sagemaker.pytorch') is None]))")
    result = _run([str(sdk3_venv / "python"), "-c", probe], cwd=sdk3_venv)
    assert json.loads(result.stdout) == ["3.27.0", "0.1.0", True, True]


def test_beside_sdk3_plan_submit_status_logs_list_work_against_moto(sdk3_venv, aws, tmp_path):
    boto3.client("s3").create_bucket(Bucket="my-bucket")  # the example spec's output bucket
    smtrain = str(sdk3_venv / "smtrain")
    env = {**os.environ, "HOME": str(tmp_path)}

    def run(*args: str) -> str:
        return _run([smtrain, *args], env=env, cwd=tmp_path).stdout

    planned = json.loads(run("plan", str(SPEC), "--job-name", "beside-sdk3-1", "-o", "json"))
    submitted = json.loads(run("submit", str(SPEC), "--job-name", "beside-sdk3-1", "-o", "json"))
    _seed_log_line("beside-sdk3-1", "hello from algo-1")

    described = boto3.client("sagemaker").describe_training_job(TrainingJobName="beside-sdk3-1")
    request = planned["create_training_job_request"]
    assert submitted["source"]["uploaded"] is True
    assert described["AlgorithmSpecification"]["TrainingImage"] == request["AlgorithmSpecification"]["TrainingImage"]
    assert described["HyperParameters"] == request["HyperParameters"]
    assert json.loads(run("status", "beside-sdk3-1", "-o", "json"))["status"] == "Completed"
    assert run("logs", "beside-sdk3-1") == "[algo-1] hello from algo-1\n"
    assert [job["job_name"] for job in json.loads(run("list", "-o", "json"))] == ["beside-sdk3-1"]


def test_beside_sdk3_build_estimator_says_what_to_install(sdk3_venv, aws, tmp_path):
    script = ("import orchestrator\n"
              "from orchestrator.errors import EnvironmentProblem\n"
              f"plan = orchestrator.plan({str(SPEC)!r})\n"
              "try:\n"
              "    orchestrator.build_estimator(plan, upload_source=False)\n"
              "except EnvironmentProblem as problem:\n"
              "    print(problem)\n"
              "    print(problem.fix)\n")
    result = _run([str(sdk3_venv / "python"), "-c", script], cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
    message, fix = result.stdout.strip().splitlines()[:2]
    assert message.startswith("sagemaker 3.27.0 is installed here, which has no sagemaker.pytorch.PyTorch")
    assert ".whl[sdk]' in a separate virtualenv" in fix  # the wheel it came from: smtrain is on no index


def test_infra_deploy_from_the_wheel_install_reads_its_template(sdk3_venv, aws, tmp_path):
    """The template is found inside site-packages: an unknown parameter is refused by name before any call."""
    result = subprocess.run([str(sdk3_venv / "smtrain"), "infra", "deploy", "--yes", "-p", "Bogus=1"],
                            check=False, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env={**os.environ, "HOME": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    assert "smtrain.yaml has no parameter Bogus" in result.stderr
    assert "cannot read the CloudFormation template" not in result.stderr


def _seed_log_line(job_name: str, message: str) -> None:
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName="/aws/sagemaker/TrainingJobs")
    stream = f"{job_name}/algo-1-{int(time.time()) - 60}"
    logs.create_log_stream(logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=stream)
    logs.put_log_events(logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=stream,
                        logEvents=[{"timestamp": int(time.time() * 1000) - 30_000, "message": message}])
