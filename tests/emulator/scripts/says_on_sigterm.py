"""Steps until SIGTERM, then says what it saved on the way out, as a script that checkpoints on a stop does
(standard library only: no torch to import)."""

import signal
import sys
import time

step = 0


def saved(signum, frame):
    print(f"checkpoint saved at step {step}", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, saved)
while True:
    step += 1
    print(f"step={step} loss={1 / step:.4f}", flush=True)
    time.sleep(0.2)
