"""The first host's rank works without a word for --seconds, then prints a progress line; --steps of them. The
other hosts' ranks wait as long, as silently, as ranks blocked in a collective on the busy one do (and no core
spins for them: a run is hung only when every host is idle).

--work loop: the rank itself computes (a long backward pass); --work child: it waits for a child process that
computes (a JIT compile's compiler), as torch.utils.cpp_extension waits for ninja. Nothing is printed while it
works, so only the work itself can tell this run from a hung one."""

import argparse
import json
import os
import subprocess
import sys
import time

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", choices=("loop", "child"), default="loop")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    print("starting", flush=True)
    works = os.environ["SM_CURRENT_HOST"] == json.loads(os.environ["SM_HOSTS"])[0]
    for step in range(1, args.steps + 1):
        if not works:
            time.sleep(args.seconds)
        elif args.work == "loop":
            spin(args.seconds)
        else:
            subprocess.run([sys.executable, "-c", SPIN.format(seconds=args.seconds)], check=True)
        print(f"epoch=1 step={step}/{args.steps} train_loss={1.0 / step:.6f}", flush=True)


if __name__ == "__main__":
    main()
