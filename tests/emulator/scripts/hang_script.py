"""Two hosts (mode none) train three steps over gloo, then rank 1 never joins the next all-reduce: rank 0
blocks in it forever (gloo waits 30 minutes), exactly the hang `smtrain local --stall-timeout` must explain.

Until a rank reaches the point where it hangs it writes a line every half second: the stall clock counts from
the last line any rank writes, so it starts only once both ranks are where the test wants them, however long
`import torch` and the rendezvous take on a loaded machine (both ranks sat in `import torch` when a bare
8-second budget ran out in CI). Each rank stops its heartbeat, and joins its thread, before it hangs, so that
the stacks show only the hang. With `--compute-first SECONDS`, rank 1 first computes that long without a word
(slow, not yet hung), then stops as before."""

import argparse
import json
import os
import threading
import time


class Heartbeat(threading.Thread):
    """`starting` every half second until stopped: a sign of life through the slow start-up."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            print("starting", flush=True)
            self.done.wait(0.5)

    def stop(self) -> None:
        self.done.set()
        self.join()


HEARTBEAT = Heartbeat()
HEARTBEAT.start()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def load_next_batch_forever() -> None:
    """The straggler: stuck outside any collective (a data loader that never returns)."""
    while True:
        time.sleep(1)


def compute(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compute-first", type=float, default=0.0)
    args = parser.parse_args()
    hosts = json.loads(os.environ["SM_HOSTS"])
    rank = hosts.index(os.environ["SM_CURRENT_HOST"])
    dist.init_process_group("gloo", rank=rank, world_size=len(hosts))
    for step in range(1, 4):
        dist.all_reduce(torch.ones(1))
        if rank == 0:
            print(f"epoch=1 step={step}/10 train_loss={1.0 / step:.6f} samples_per_sec=100.0", flush=True)
    HEARTBEAT.stop()
    if rank == 0:
        print("about to block", flush=True)
    if rank == 1:
        compute(args.compute_first)
        load_next_batch_forever()
    dist.all_reduce(torch.ones(1))


if __name__ == "__main__":
    main()
