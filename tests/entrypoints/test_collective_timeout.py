"""The shared entrypoints' collective timeout: a collective that a rank never joins fails with an error after
`collective-timeout-seconds` (gloo here; NCCL through its watchdog, whose switch is set where unset)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ENTRYPOINTS = Path(__file__).resolve().parents[2] / "entrypoints"
sys.path.insert(0, str(ENTRYPOINTS))

import backends  # noqa: E402
from config import HyperparameterError, parse_config  # noqa: E402

RUN_DEADLINE_SECONDS = 600
# Rank 0 waits in an all_reduce that rank 1, asleep, never joins, and leaves as train.py does: a plain
# sys.exit with gloo's timed-out receive still pending aborts in finalization (exit -6, 1 CI run in ~10).
RANK_SCRIPT = textwrap.dedent("""
    import sys, time
    import torch, torch.distributed as dist
    import backends, dist_env
    from train import leave
    env = dist_env.detect(__import__("os").environ)
    runtime = backends.resolve_runtime("gloo", env, print)
    backends.init_process_group(runtime, env, float(sys.argv[1]))
    if env.rank == 1:
        print("rank 1 never joins", flush=True)
        time.sleep(3600)
    started = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1))
    except RuntimeError as error:
        print(f"failed after {time.monotonic() - started:.1f} s: {error}", flush=True)
        leave(1)
""")


def test_collective_timeout_is_a_hyperparameter_with_a_sane_default():
    assert parse_config([], {}).collective_timeout_seconds == 1800
    assert parse_config(["--collective-timeout-seconds", "60"], {}).collective_timeout_seconds == 60
    with pytest.raises(HyperparameterError, match="--collective-timeout-seconds must be at least 1, got 0"):
        parse_config(["--collective-timeout-seconds", "0"], {})


@pytest.mark.parametrize(("environ", "version", "expected"), [
    ({}, "2.13.0+cpu", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}),
    ({}, "2.1.2", {"NCCL_ASYNC_ERROR_HANDLING": "1"}),
    ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}, "2.13.0", {}),
    ({"NCCL_ASYNC_ERROR_HANDLING": "1"}, "2.13.0", {}),
    ({"TORCH_NCCL_BLOCKING_WAIT": "1"}, "2.13.0", {}),
])
def test_nccl_error_handling_is_set_only_where_the_environment_has_not_chosen(environ, version, expected):
    assert backends.nccl_error_handling(environ, version) == expected


@pytest.mark.slow
def test_a_collective_a_rank_never_joins_fails_after_the_timeout(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ENTRYPOINTS), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
            "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    ranks = [subprocess.Popen([sys.executable, "-c", RANK_SCRIPT, "3"], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env={**base, "RANK": str(rank), "LOCAL_RANK": str(rank)}) for rank in (0, 1)]
    try:
        # Only a collective that never times out reaches this deadline (a loaded machine can take a minute or
        # more to start both ranks); rank 1 sleeps longer still, so rank 0's wait can only end by the timeout.
        output, _ = ranks[0].communicate(timeout=RUN_DEADLINE_SECONDS)
    finally:
        for process in ranks:
            process.kill()
            process.wait()

    assert ranks[0].returncode == 1, output
    assert "failed after " in output and "Timed out" in output, output
    waited = float(output.split("failed after ", 1)[1].split(" s:", 1)[0])
    assert 2.5 <= waited <= 10, output  # the 3 s timeout, not gloo's default of 30 minutes
