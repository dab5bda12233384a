"""Prints the paths the toolkit gives a job and where it runs, its home, torch's extensions folder, torch.compile's
default cache folder (as torch names it, without importing torch) and its checkpoint path (writing a file there),
then the last rank opens a channel file that is not there: on SageMaker every one of them names the container's
tree, and so does the FileNotFoundError."""

import getpass
import json
import os
import sys
import tempfile
import time

rank = int(os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or
           json.loads(os.environ["SM_HOSTS"]).index(os.environ["SM_CURRENT_HOST"]))
world = int(os.environ.get("WORLD_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or
            len(json.loads(os.environ["SM_HOSTS"])))
training_env = json.loads(os.environ["SM_TRAINING_ENV"])
seen = {name: os.environ.get(name) for name in (
    "SM_MODEL_DIR", "SM_CHANNEL_TRAIN", "SM_OUTPUT_DATA_DIR", "SM_OUTPUT_DIR", "SM_INPUT_DIR", "SM_INPUT_CONFIG_DIR",
    "SM_OUTPUT_INTERMEDIATE_DIR", "SAGEMAKER_BASE_DIR", "PWD", "SM_HP_MODEL_PATH", "HOME", "TORCH_EXTENSIONS_DIR",
    "TORCHINDUCTOR_CACHE_DIR", "SM_HP_CHECKPOINT_DIR")}
extensions = os.path.expanduser("~/.cache/torch_extensions")
compiled = os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
os.makedirs(os.environ["SM_HP_CHECKPOINT_DIR"], exist_ok=True)
with open(os.path.join(os.environ["SM_HP_CHECKPOINT_DIR"], f"rank-{rank}.txt"), "w") as checkpoint:
    checkpoint.write("saved\n")
seen.update({"cwd": os.getcwd(), "code on sys.path": [path for path in sys.path if path.endswith("/code")],
             "code on PYTHONPATH": [path for path in os.environ["PYTHONPATH"].split(os.pathsep)
                                    if path.endswith("/code")],
             "training_env": {key: training_env[key] for key in ("model_dir", "channel_input_dirs", "output_dir")},
             "~": os.path.expanduser("~"),
             "torch extensions": sorted(os.listdir(extensions)) if os.path.isdir(extensions) else None,
             "torch.compile's cache": sorted(os.listdir(compiled)) if os.path.isdir(compiled) else None,
             "the machine's home file seen": os.path.exists(os.environ["MACHINE_HOME_FILE"])})
print(f"container paths of rank {rank}: {json.dumps(seen, sort_keys=True)}", flush=True)
printed = os.environ["RANKS_PRINTED_DIR"]  # a folder of the test's, outside the container's tree
open(os.path.join(printed, str(rank)), "w").close()
if rank == world - 1:  # fails once every rank printed: a failing host stops the others, as on SageMaker
    while len(os.listdir(printed)) < world:
        time.sleep(0.05)
    open(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "missing.csv"))
