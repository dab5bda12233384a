"""Writes to /opt/ml literally, as many published scripts do: rank 0 the model, every process a note of where it ran."""

import json
import os

rank = int(os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or
           json.loads(os.environ["SM_HOSTS"]).index(os.environ["SM_CURRENT_HOST"]))
if rank == 0:
    with open("/opt/ml/model/model.pth", "wb") as handle:
        handle.write(b"weights")
os.makedirs("/opt/ml/output/data", exist_ok=True)
with open(f"/opt/ml/output/data/rank-{rank}.json", "w") as handle:
    json.dump({"rank": rank, "code": os.path.exists("/opt/ml/code/literal_opt_ml.py")}, handle)
