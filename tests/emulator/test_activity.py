"""What a silent run's hosts do, read from outside: a process that computes makes its host busy, one that sleeps
leaves it idle, a child that computes counts for its parent's host, and a launcher's CPU time counts only before it
has started its children (its start-up), never while it waits for them; a rank moving data is busy, a plain-HTTP
download into memory too (its socket's bytes), and one idle on an open connection is not."""

from __future__ import annotations

import contextlib
import http.server
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest

from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.launching.launch import RUN_ID_VARIABLE
from orchestrator.emulator.supervising.activity import ActivitySampler

RUN_ID = "activity-test"
# Each says "ready" once it is at its work, so that a window samples the work itself however long start-up took.
READY = "print('ready', flush=True)\n"
SPIN = f"import time\n{READY}end = time.monotonic() + 30\nwhile time.monotonic() < end:\n    pass\n"
SLEEP = f"import time\n{READY}time.sleep(30)\n"
SPAWN_SPIN = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {SPIN!r}])\n"
# The shortest the sampler reads (activity.SAMPLE_SECONDS): a spinner is busy by its CPU share or, starved, by its
# state R, and a sleeper uses no CPU, in a window of any length.
WINDOW_SECONDS = 0.5


@pytest.fixture
def start():
    started: list[subprocess.Popen] = []

    def run(host: str, *command: str) -> subprocess.Popen:
        env = {**os.environ, RUN_ID_VARIABLE: RUN_ID, HOSTNAME_VARIABLE: host,
               "SM_HOSTS": '["algo-1", "algo-2"]', "SM_CURRENT_HOST": host}  # mode none: a rank per host
        started.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True))
        return started[-1]

    yield run
    for process in started:
        for child in psutil.Process(process.pid).children(recursive=True):
            child.kill()
        process.kill()
        process.wait()


def _activities(processes: list[subprocess.Popen]) -> dict:
    sampler = ActivitySampler(RUN_ID, window_seconds=WINDOW_SECONDS)

    def live() -> list[psutil.Process]:
        found = []
        for process in processes:
            parent = psutil.Process(process.pid)
            found += [parent, *parent.children(recursive=True)]
        return found

    for process in processes:
        assert process.stdout.readline() == "ready\n"
    sampler.sample(live())
    time.sleep(WINDOW_SECONDS * 1.2)  # a window's span after the first sample, whatever the clock's grain
    sampler.sample(live())
    return {activity.host: activity for activity in sampler.activities()}


def test_a_computing_rank_is_busy_and_a_sleeping_one_idle(start):
    found = _activities([start("algo-1", sys.executable, "-c", SPIN), start("algo-2", sys.executable, "-c", SLEEP)])

    assert found["algo-1"].busy is True and "rank 0 (algo-1) at " in found["algo-1"].detail
    assert found["algo-2"].busy is False


def test_a_child_that_computes_counts_for_its_ranks_host(start):
    found = _activities([start("algo-1", sys.executable, "-c", SPAWN_SPIN)])

    assert found["algo-1"].busy is True
    assert found["algo-1"].detail.startswith("python"), found["algo-1"].detail
    assert " under rank 0 (algo-1) at " in found["algo-1"].detail


def test_a_launchers_polling_while_it_waits_for_its_children_is_not_the_jobs_progress(start):
    launcher = start("algo-1", "/bin/sh", "-c", "sleep 60 & echo ready; while :; do :; done")
    # The shell says ready once it has forked its child, maybe before the child has become `sleep`: a process caught
    # mid-exec is not sampled yet, and one that appears within the window is (rightly) progress.
    deadline = time.monotonic() + 60
    while [child.name() for child in psutil.Process(launcher.pid).children()] != ["sleep"]:
        assert time.monotonic() < deadline, "the launcher's child never became `sleep`"
        time.sleep(0.01)
    found = _activities([launcher])

    assert found["algo-1"].busy is False, found["algo-1"].detail


def test_a_launchers_start_up_before_it_has_children_is(start):
    """torchrun's agent imports torch for seconds before it starts a worker."""
    found = _activities([start("algo-1", "/bin/sh", "-c", "echo ready; while :; do :; done")])

    assert found["algo-1"].busy is True, found["algo-1"].detail


PINNED = "import os\nos.sched_setaffinity(0, {0})\n"
STARVED_SPIN = PINNED + "os.nice(19)\n" + SPIN  # nice 19 beside a nice 0 spinner: about 1.5% of the core
STARVED_SLEEP = PINNED + "os.nice(19)\n" + SLEEP


def test_a_rank_starved_of_cpu_by_a_loaded_machine_is_busy_and_a_sleeping_one_still_idle(start):
    """A JIT compile beside a loaded CI runner's other work gets a few percent of a core: it waits for a core (the
    kernel's state R), which is not idle; a process asleep on the same loaded core is."""
    competitor = subprocess.Popen([sys.executable, "-c", PINNED + SPIN], stdout=subprocess.DEVNULL)
    try:
        found = _activities([start("algo-1", sys.executable, "-c", STARVED_SPIN),
                             start("algo-2", sys.executable, "-c", STARVED_SLEEP)])
    finally:
        competitor.kill()
        competitor.wait()

    assert found["algo-1"].busy is True, found["algo-1"].detail
    assert found["algo-2"].busy is False, found["algo-2"].detail


READ_FIFO = f"import os, sys\nfifo = open(sys.argv[1], 'rb')\n{READY}while fifo.read(65536):\n    pass\n"
WRITE_FIFO = f"import sys\nfifo = open(sys.argv[1], 'wb')\n{READY}while True:\n    fifo.write(bytes(65536))\n"


@pytest.mark.parametrize("direction", ["read", "write"])
def test_a_rank_moving_data_slowly_with_little_cpu_is_busy_beside_a_sleeping_one(direction, start, tmp_path):
    """A download, a Pipe mode channel, a dataset on a slow disk, torch.save to one: the rank waits on I/O (state S
    or D, little CPU) and makes progress. Here it reads or writes a FIFO the test feeds or drains 64 KiB every
    0.05 s (1.25 MiB/s, twenty times activity.BUSY_BYTES_PER_SECOND), until the window has been read."""
    fifo = tmp_path / "slow"
    os.mkfifo(fifo)
    done = threading.Event()

    def trickle() -> None:
        with contextlib.suppress(OSError), open(fifo, "wb" if direction == "read" else "rb") as end:
            while not done.wait(0.05):
                end.write(bytes(65536)) if direction == "read" else end.read(65536)

    # A daemon: were the mover to die before opening the FIFO, the trickler's open would never return.
    threading.Thread(target=trickle, daemon=True).start()
    mover = start("algo-1", sys.executable, "-c", READ_FIFO if direction == "read" else WRITE_FIFO, str(fifo))
    try:
        found = _activities([mover, start("algo-2", sys.executable, "-c", SLEEP)])
    finally:
        done.set()

    assert found["algo-1"].busy is True, found["algo-1"].detail
    assert "; rank 0 (algo-1) reads or writes " in found["algo-1"].detail, found["algo-1"].detail
    assert found["algo-2"].busy is False, found["algo-2"].detail


class _Trickle(http.server.BaseHTTPRequestHandler):
    """`/body`: 64 KiB every 0.05 s (1.25 MiB/s, twenty times activity.BUSY_BYTES_PER_SECOND) until the server's
    `done` is set; `/idle`: the headers, then nothing until then (an open connection that moves no byte)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.flush()
        with contextlib.suppress(ConnectionError):
            while not self.server.done.wait(0.05):  # type: ignore[attr-defined]
                if self.path == "/body":
                    self.wfile.write(bytes(65536))

    def log_message(self, *args: object) -> None:
        pass


# Plain HTTP read into memory: urllib's recv() on the socket, which /proc/<pid>/io does not count.
DOWNLOAD_TO_MEMORY = (f"import sys, urllib.request\nbody = urllib.request.urlopen(sys.argv[1])\n{READY}"
                      "while body.read(65536):\n    pass\n")
IDLE_CONNECTION = f"import sys, time, urllib.request\nbody = urllib.request.urlopen(sys.argv[1])\n{READY}time.sleep(30)\n"


def test_a_rank_downloading_into_memory_over_plain_http_is_busy_beside_one_idle_on_an_open_connection(start):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.done = threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{server.server_port}"
    try:
        found = _activities([start("algo-1", sys.executable, "-c", DOWNLOAD_TO_MEMORY, f"{address}/body"),
                             start("algo-2", sys.executable, "-c", IDLE_CONNECTION, f"{address}/idle")])
    finally:
        server.done.set()  # type: ignore[attr-defined]
        server.shutdown()

    assert found["algo-1"].busy is True, found["algo-1"].detail
    assert "; rank 0 (algo-1) reads or writes " in found["algo-1"].detail, found["algo-1"].detail
    assert found["algo-2"].busy is False, found["algo-2"].detail
