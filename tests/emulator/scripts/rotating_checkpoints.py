"""Saves a checkpoint folder a step (algo-1 only) and keeps the newest 2 (as Trainer's save_total_limit=2 does); says
what each host received, resumes after the newest, and waits at --wait-at to be interrupted. With --tensorboard-dir
it writes an event file a step there too."""

import argparse
import os
import shutil
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint-dir", required=True)
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--wait-at", type=int, default=0)
parser.add_argument("--tensorboard-dir")
args = parser.parse_args()
os.makedirs(args.checkpoint_dir, exist_ok=True)
received = sorted(os.listdir(args.checkpoint_dir), key=lambda name: int(name.split("-")[1]))
print(f"received {' '.join(received) or 'nothing'}", flush=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
first = int(received[-1].split("-")[1]) + 1 if received else 1
if os.environ["CURRENT_HOST"] != "algo-1":  # saves nothing; waits with algo-1 to be interrupted
    if first <= args.wait_at:
        time.sleep(120)
    sys.exit(0)
for step in range(first, args.steps + 1):
    folder = os.path.join(args.checkpoint_dir, f"step-{step}")
    os.makedirs(folder)
    with open(os.path.join(folder, "state.txt"), "w") as handle:
        handle.write(f"step {step}\n")
    for old in sorted(os.listdir(args.checkpoint_dir), key=lambda name: int(name.split("-")[1]))[:-2]:
        shutil.rmtree(os.path.join(args.checkpoint_dir, old))
    if args.tensorboard_dir:
        os.makedirs(args.tensorboard_dir, exist_ok=True)
        with open(os.path.join(args.tensorboard_dir, f"events.out.tfevents.step-{step}"), "w") as handle:
            handle.write(f"step {step}\n")
    print(f"step={step}/{args.steps}", flush=True)
    if step == args.wait_at:
        time.sleep(120)
