"""Prints the paths the toolkit gives a job and where it runs, then the last rank opens a channel file that is not
there: on SageMaker every one of them names the container's tree, and so does the FileNotFoundError."""

import json
import os
import sys

rank = int(os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or
           json.loads(os.environ["SM_HOSTS"]).index(os.environ["SM_CURRENT_HOST"]))
world = int(os.environ.get("WORLD_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or
            len(json.loads(os.environ["SM_HOSTS"])))
training_env = json.loads(os.environ["SM_TRAINING_ENV"])
seen = {name: os.environ.get(name) for name in (
    "SM_MODEL_DIR", "SM_CHANNEL_TRAIN", "SM_OUTPUT_DATA_DIR", "SM_OUTPUT_DIR", "SM_INPUT_DIR", "SM_INPUT_CONFIG_DIR",
    "SM_OUTPUT_INTERMEDIATE_DIR", "SAGEMAKER_BASE_DIR", "PWD", "SM_HP_MODEL_PATH")}
seen.update({"cwd": os.getcwd(), "code on sys.path": [path for path in sys.path if path.endswith("/code")],
             "code on PYTHONPATH": [path for path in os.environ["PYTHONPATH"].split(os.pathsep)
                                    if path.endswith("/code")],
             "training_env": {key: training_env[key] for key in ("model_dir", "channel_input_dirs", "output_dir")}})
print(f"container paths of rank {rank}: {json.dumps(seen, sort_keys=True)}", flush=True)
if rank == world - 1:
    open(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "missing.csv"))
