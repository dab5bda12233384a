"""smtrain's parses of Python source take turns: a local run's thread reading its script while the caller plans
the next job (a notebook's two function jobs started side by side) failed under CPython 3.11 with
`SystemError: AST constructor recursion depth mismatch`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Four threads parse a module of smtrain's 8 times each, while a garbage collection inside the AST converter (made
# frequent) yields the GIL (a sleep of 0) to another thread mid-conversion, as other work can in a notebook.
# With plain ast.parse this failed in each of three runs here (Python 3.11.7); through python_source.parse, never.
RACE = textwrap.dedent("""
    import gc, sys, threading, time
    from orchestrator import python_source

    source = open(sys.argv[1]).read()
    failures = []

    def parse_often():
        for _ in range(8):
            try:
                python_source.parse(source)
            except SystemError as error:
                failures.append(str(error))

    gc.set_threshold(20)
    gc.callbacks.append(lambda *_: time.sleep(0))
    threads = [threading.Thread(target=parse_often) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(len(failures), failures[:1])
""")


def test_threads_parsing_at_once_take_turns(tmp_path):
    script = tmp_path / "race.py"
    script.write_text(RACE)
    parsed = REPO / "orchestrator" / "emulator" / "supervising" / "supervisor.py"
    done = subprocess.run([sys.executable, str(script), str(parsed)], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.stdout.strip() == "0 []", (done.stdout, done.stderr[-2000:])
