"""Fails on one rank (`--fail-rank`) and hangs on the others, as ranks waiting for a crashed peer do."""

import argparse
import json
import os
import time


def rank() -> int:
    for name in ("RANK", "OMPI_COMM_WORLD_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return json.loads(os.environ["SM_HOSTS"]).index(os.environ["SM_CURRENT_HOST"])


parser = argparse.ArgumentParser()
parser.add_argument("--fail-rank", type=int, default=1)
args = parser.parse_args()
if rank() == args.fail_rank:
    print(f"rank {rank()} is failing on purpose", flush=True)
    raise SystemExit("ValueError: boom on purpose")
time.sleep(300)
