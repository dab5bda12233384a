"""Leaves processes behind the way careless or clever scripts do, then completes, fails or waits.

Every process it starts carries `--tag TAG` in its command line, so a test can count them from outside:
* a child it never waits for,
* an orphan: started by a shell that exits at once (re-parented to the nearest subreaper, or init),
* an escapee: `setsid env -i`, in a new session with an empty environment, orphaned as well.
Then `--then complete` exits 0, `fail` exits 1, `wait` sleeps, `ignore-term` ignores SIGTERM and sleeps.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--tag", required=True)
parser.add_argument("--then", default="complete")
args, _ = parser.parse_known_args()

sleeper = [sys.executable, "-c", "import time; time.sleep(300)", "--tag", args.tag]
subprocess.Popen(sleeper)
subprocess.run(["/bin/sh", "-c", " ".join(sleeper[:2] + ["'import time; time.sleep(300)'"] + sleeper[3:]) + " &"],
               check=True)
subprocess.run(["/bin/sh", "-c", "setsid env -i " + " ".join(sleeper[:2] + ["'import time; time.sleep(300)'"]
                                                               + sleeper[3:]) + " &"], check=True)
print(f"spawned 3 processes tagged {args.tag} (rank {os.environ.get('RANK', '-')})", flush=True)

if args.then == "fail":
    sys.exit(1)
if args.then == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ignoring SIGTERM", flush=True)
if args.then in ("wait", "ignore-term"):
    time.sleep(300)
