"""A data-loading thread raises and the main thread waits on forever for what it would have loaded, as a rank
does whose prefetch thread died: the process never exits, so only max_run_seconds ends the job."""

import threading
import time


def load_shards() -> None:
    raise ValueError("corrupt shard 3")


threading.Thread(target=load_shards, name="loader").start()
time.sleep(300)
