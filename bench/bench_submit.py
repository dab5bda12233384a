"""`smtrain submit` against the bare SDK v2 script a user writes, each a fresh process, on moto's server.

    .venv/bin/python bench/bench_submit.py              # 8 jobs each (plus one untimed warm-up each)
    .venv/bin/python bench/bench_submit.py --jobs 4

smtrain: `smtrain submit job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml -o json`: load and check the spec, build the
request, HeadObject on the content-addressed tarball (PutObject only the first time), CreateTrainingJob. Bare:
`baseline_sdk_submit.py`, the same job as `import sagemaker`, `PyTorch(...)`, `fit(wait=False)`, where the SDK
tars source_dir and uploads it under the job's name every time. Both run from the repository root against
one moto server on 127.0.0.1, alternating (warm-up, then A B A B ...), with the same environment: fake
credentials, AWS_ENDPOINT_URL, no AWS or SageMaker config files. The SDK's telemetry stays on, as in a user's
script (a SageMaker config file that turns it off makes v2 re-validate that file at each of its ~28 config
lookups: about 10 s per run here, which would flatter smtrain); its HTTPS GET to AWS is refused on this
machine by a proxy address nobody listens on (HTTPS_PROXY=127.0.0.1:9; NO_PROXY keeps moto direct), so nothing
leaves the machine. Goal (issue 36): median wall time <= 0.15x. A PYTHONPATH set by the caller is kept.
Afterwards the bucket is listed to count what each path uploaded. Writes bench/results/submit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _timing import RESULTS, alternate, report

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SPEC = "job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml"
BUCKET = "my-bucket"  # the spec's output bucket
# Nothing listens on the discard port: the SDK's telemetry GET (via `requests`) fails at once, locally.
NOWHERE = "http://127.0.0.1:9"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8, help="timed jobs submitted by each path (default 8)")
    options = parser.parse_args()

    server, endpoint = _start_moto()
    try:
        env = _environment(endpoint)
        _create_bucket(env)
        timings = alternate({
            "smtrain submit": [str(Path(sys.executable).parent / "smtrain"), "submit", SPEC, "-o", "json"],
            "bare sdk v2 script": [sys.executable, str(BENCH / "baseline_sdk_submit.py")],
        }, repeats=options.jobs, env=env, cwd=REPO)
        uploads = _uploads(env)
    finally:
        server.terminate()
        server.wait(timeout=10)
    summary = report("submit", timings, {
        "smtrain submit / bare sdk script": ("smtrain submit", "bare sdk v2 script", 0.15),
    })
    summary["uploads"] = uploads
    summary["jobs_each"] = options.jobs
    (RESULTS / "submit.json").write_text(json.dumps(summary, indent=2) + "\n")
    for path, counted in uploads.items():
        print(f"  {path:<34} {counted['objects']} tarball(s) uploaded, {counted['bytes'] / 1024:.1f} KiB")


def _environment(endpoint: str) -> dict[str, str]:
    """Fake credentials, every client on moto, no developer config read: nothing leaves this machine."""
    home = tempfile.mkdtemp(prefix="smtrain-bench-")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "HTTPS_PROXY": NOWHERE,
        "HTTP_PROXY": NOWHERE,
        "NO_PROXY": "127.0.0.1,localhost",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }


def _create_bucket(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-c", f"import boto3; boto3.client('s3').create_bucket(Bucket={BUCKET!r})"],
                   env=env, check=True)


def _uploads(env: dict[str, str]) -> dict[str, dict[str, int]]:
    """Tarballs in the bucket: smtrain's under code/<sha256>/, the SDK's under <job>/source/."""
    script = ("import boto3, json; pages = boto3.client('s3').get_paginator('list_objects_v2')"
              f".paginate(Bucket={BUCKET!r}); print(json.dumps([[o['Key'], o['Size']] for p in pages "
              "for o in p.get('Contents', [])]))")
    listing = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True,
                             text=True).stdout
    counted = {"smtrain submit": {"objects": 0, "bytes": 0}, "bare sdk v2 script": {"objects": 0, "bytes": 0}}
    for key, size in json.loads(listing):
        path = "smtrain submit" if key.startswith("code/") else "bare sdk v2 script"
        counted[path]["objects"] += 1
        counted[path]["bytes"] += size
    return counted


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


if __name__ == "__main__":
    main()
