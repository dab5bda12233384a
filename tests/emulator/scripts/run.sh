#!/usr/bin/env python3
"""A shell entry point whose shebang names Python: run as `./run.sh`, it writes the arguments it received."""

import json
import os
import socket

import sys

rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], f"args-{socket.gethostname()}-{rank}.json"), "w") as out:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd()}, out)
