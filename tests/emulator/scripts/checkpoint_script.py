"""Writes a checkpoint to --checkpoint-dir and waits to be interrupted; a restart that finds it finishes."""

import argparse
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint-dir", required=True)
args = parser.parse_args()
path = os.path.join(args.checkpoint_dir, f"ckpt-{os.environ['CURRENT_HOST']}.txt")
if os.path.exists(path):
    print(f"resumed from {path}", flush=True)
    sys.exit(0)
os.makedirs(args.checkpoint_dir, exist_ok=True)
with open(path, "w") as handle:
    handle.write("step 1\n")
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("checkpoint written", flush=True)
time.sleep(120)
