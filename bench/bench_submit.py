"""Submitting jobs to moto's server: smtrain's submit path and a bare SageMaker SDK v2 script, side by side.

    .venv/bin/python bench/bench_submit.py              # 20 jobs each, about a minute on 2 cores
    .venv/bin/python bench/bench_submit.py --jobs 5

smtrain: `submit(plan(spec))`, the notebook API and the body of `smtrain submit`: pack the source, build the
estimator and capture its request with zero network (the plan), HeadObject (PutObject only the first time: the
tarball is content-addressed), then the estimator's fit() with the request check. Bare: what a notebook user
writes, `PyTorch(source_dir=<local dir>, ...).fit(wait=False)`, where the SDK tars source_dir and uploads it
under the job's name every time.

Both submit the same job (job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml: 2 x ml.c5.2xlarge, the entrypoints/
source) to one moto server started once, from this process (the SDK is imported before timing), each through
one boto3 session reused for every job, alternating so that a busy moment of the machine hits both alike.
Per job: wall and CPU seconds, HTTP requests, bytes uploaded. Writes everything to bench/results/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SPEC = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
RESULTS = BENCH / "results"
PATHS = ("bare", "smtrain")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs submitted by each path (default 20)")
    options = parser.parse_args()

    server, endpoint = _start_moto()
    try:
        _point_aws_at(endpoint)
        results = _run(options.jobs)
    finally:
        server.terminate()
        server.wait(timeout=10)
    _report(results, options.jobs)


def _run(jobs: int) -> dict[str, list[dict[str, float]]]:
    import boto3

    from orchestrator.spec.loader import load_spec
    from orchestrator.api import plan
    from orchestrator.cloud.sdk import TELEMETRY_OPT_OUT, import_sagemaker
    from orchestrator.cloud.submission import submit

    sagemaker = import_sagemaker()  # first, so that the SDK's import-time chatter stays off
    spec = load_spec(SPEC)
    bucket = spec.output_path.removeprefix("s3://").split("/")[0]
    boto3.client("s3").create_bucket(Bucket=bucket)
    sessions = {path: boto3.Session() for path in PATHS}
    traffic = {path: _count_traffic(session) for path, session in sessions.items()}
    bare_session = sagemaker.session.Session(
        boto_session=sessions["bare"], default_bucket=bucket, sagemaker_config=TELEMETRY_OPT_OUT
    )

    def submit_bare() -> dict[str, float]:
        estimator = sagemaker.pytorch.PyTorch(
            entry_point=spec.entry_point,
            source_dir=spec.source_dir,
            role=spec.role,
            instance_type=spec.instance.type,
            instance_count=spec.instance.count,
            framework_version=spec.framework_version,
            py_version=spec.py_version,
            hyperparameters=dict(spec.hyperparameters),
            output_path=spec.output_path,
            checkpoint_s3_uri=spec.checkpoint.s3_uri,
            max_run=spec.max_run_seconds,
            base_job_name=spec.name,
            sagemaker_session=bare_session,
        )
        estimator.fit(wait=False, logs=False)
        return {}

    def submit_smtrain() -> dict[str, float]:
        started = time.perf_counter()
        job_plan = plan(spec, boto=sessions["smtrain"])
        planned = time.perf_counter()
        submit(job_plan, boto=sessions["smtrain"])
        return {"plan_s": planned - started, "submit_s": time.perf_counter() - planned}

    submitters: dict[str, Callable[[], dict[str, float]]] = {"bare": submit_bare, "smtrain": submit_smtrain}
    results: dict[str, list[dict[str, float]]] = {path: [] for path in PATHS}
    for index in range(jobs):
        order = PATHS if index % 2 == 0 else PATHS[::-1]
        for path in order:
            requests_before, bytes_before = traffic[path]["requests"], traffic[path]["uploaded_bytes"]
            wall, cpu = time.perf_counter(), time.process_time()
            parts = submitters[path]()
            results[path].append(
                {
                    "wall_s": time.perf_counter() - wall,
                    "cpu_s": time.process_time() - cpu,
                    "requests": traffic[path]["requests"] - requests_before,
                    "uploaded_bytes": traffic[path]["uploaded_bytes"] - bytes_before,
                    **parts,
                }
            )
        print(
            f"  job {index + 1}/{jobs}: "
            + ", ".join(f"{path} {results[path][-1]['wall_s']:.2f} s" for path in PATHS),
            flush=True,
        )
    return results


def _count_traffic(session: Any) -> dict[str, int]:
    """Counts the HTTP requests a session's clients send, and the bytes of S3 uploads among them."""
    counts = {"requests": 0, "uploaded_bytes": 0}

    def count(request: Any, event_name: str, **_: Any) -> None:
        counts["requests"] += 1
        if event_name.endswith((".PutObject", ".UploadPart")):
            counts["uploaded_bytes"] += int(request.headers.get("Content-Length", 0))

    session.events.register("before-send", count)
    return counts


def _report(results: dict[str, list[dict[str, float]]], jobs: int) -> None:
    def median(path: str, key: str) -> float:
        return statistics.median(row[key] for row in results[path])

    def total(path: str, key: str) -> float:
        return sum(row[key] for row in results[path])

    print(
        f"\n{'path':8s} {'median s/job':>12s} {'min':>6s} {'max':>6s} {'total s':>8s} {'CPU s/job':>9s} "
        f"{'requests':>8s} {'KiB uploaded':>12s}"
    )
    for path in PATHS:
        walls = [row["wall_s"] for row in results[path]]
        print(
            f"{path:8s} {median(path, 'wall_s'):12.3f} {min(walls):6.2f} {max(walls):6.2f} "
            f"{total(path, 'wall_s'):8.2f} {median(path, 'cpu_s'):9.3f} {total(path, 'requests'):8.0f} "
            f"{total(path, 'uploaded_bytes') / 1024:12.1f}"
        )
    ratios = {
        "median_wall": median("smtrain", "wall_s") / median("bare", "wall_s"),
        "total_wall": total("smtrain", "wall_s") / total("bare", "wall_s"),
        "median_cpu": median("smtrain", "cpu_s") / median("bare", "cpu_s"),
    }
    print(
        f"\nsmtrain per job (medians): plan {median('smtrain', 'plan_s'):.3f} s + "
        f"submit {median('smtrain', 'submit_s'):.3f} s"
    )
    print(
        f"ratio smtrain/bare: {ratios['median_wall']:.2f} median wall, "
        f"{ratios['total_wall']:.2f} total wall, {ratios['median_cpu']:.2f} median CPU"
    )

    import boto3
    import moto
    import sagemaker

    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result_path = RESULTS / f"bench_submit-{stamp}.json"
    result_path.write_text(
        json.dumps(
            {
                "jobs": jobs,
                "spec": str(SPEC.relative_to(REPO)),
                "per_job": results,
                "ratio_smtrain_over_bare": ratios,
                "versions": {
                    "sagemaker": sagemaker.__version__,
                    "boto3": boto3.__version__,
                    "moto": moto.__version__,
                },
                "cpu_count": os.cpu_count(),
                "load_average": os.getloadavg(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written: {result_path}")


def _start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """moto's server in its own process on 127.0.0.1, as the test suite runs it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
            return server, endpoint
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError("moto server did not start") from None
            time.sleep(0.1)


def _point_aws_at(endpoint: str) -> None:
    """Fake credentials and every client on moto: nothing leaves this machine."""
    for name in [name for name in os.environ if name.startswith(("AWS_", "SAGEMAKER_", "SMTRAIN_"))]:
        del os.environ[name]
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
    )


if __name__ == "__main__":
    main()
