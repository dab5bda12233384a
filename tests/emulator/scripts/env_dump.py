"""Writes what this process sees (environment, argv, cwd, host name) to SM_OUTPUT_DATA_DIR/seen-<host>-<rank>.json."""

import json
import os
import socket
import sys

rank = os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
host = os.environ.get("SMTRAIN_TEST_HOST", os.environ["CURRENT_HOST"])
path = os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], f"seen-{host}-{rank}.json")
with open(path, "w") as handle:
    json.dump({"env": dict(os.environ), "argv": sys.argv[1:], "cwd": os.getcwd(), "hostname": socket.gethostname()},
              handle)
