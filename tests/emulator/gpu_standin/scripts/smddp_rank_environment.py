"""Prints, as one JSON line, the SMDDP and torch rank variables this rank saw at start-up (before any import of
torch or smdistributed), then after importing smdistributed's torch_smddp."""

import json
import os

NAMES = ("SMDATAPARALLEL_LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
at_start = {name: os.environ.get(name) for name in NAMES}
import smdistributed.dataparallel.torch.torch_smddp  # noqa: E402,F401

print(json.dumps({"at_start": at_start, "after_import": {name: os.environ.get(name) for name in NAMES}}), flush=True)
