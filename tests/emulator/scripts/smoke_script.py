"""A training loop that runs until it is stopped: a progress line every 0.1 s; on SIGTERM it writes a checkpoint
to --checkpoint-dir and exits 0, as StopTrainingJob expects, or (--on-sigterm sigkill) dies by SIGKILL, as a
process the out-of-memory killer ends during the grace period."""

import argparse
import os
import signal
import time

parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint-dir", required=True)
parser.add_argument("--on-sigterm", choices=["checkpoint", "sigkill"], default="checkpoint")
args = parser.parse_args()
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
step = 0
while not stopping:
    step += 1
    print(f"epoch=1 step={step}/100000 train_loss={1 / step:.6f}", flush=True)
    time.sleep(0.1)
if args.on_sigterm == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
os.makedirs(args.checkpoint_dir, exist_ok=True)
with open(os.path.join(args.checkpoint_dir, f"ckpt-{os.environ['CURRENT_HOST']}.txt"), "w") as handle:
    handle.write(f"step {step}\n")
print(f"checkpoint saved at step {step}", flush=True)
