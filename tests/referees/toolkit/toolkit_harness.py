"""Runs SageMaker's own toolkits on emulated hosts' config trees and writes what they derive, as JSON.

Run as `python toolkit_harness.py OUTPUT.json HOST_ROOT...` with TRAINING_JOB_NAME, SAGEMAKER_TRAINING_MODULE and
an `nvidia-smi` on PATH that lists the instance's GPUs. For each host (its /opt/ml folder as SAGEMAKER_BASE_DIR,
the toolkit's own hook), the PyTorch toolkit's `training.train` runs for real up to the point where it would start
the user's code (`entry_point.run`, captured here): its environment settings and its choice of runner are its
own. The runner is then built with the training toolkit's `runner.get` and asked for its command line, without
running it. torch's version comes from its metadata rather than an import (2 s a host on a small machine).
"""

import importlib
import inspect
import json
import os
import sys
import types
from importlib import metadata

torch_stand_in = types.ModuleType("torch")
torch_stand_in.__version__ = metadata.version("torch")
sys.modules.setdefault("torch", torch_stand_in)

import gethostname
from sagemaker_pytorch_container import training
from sagemaker_training import environment, process, runner
from sagemaker_training.runner import RunnerType

GETHOSTNAME_LIBRARY = "<gethostname library>"


def main(output_path: str, host_roots: list[str]) -> None:
    initial = dict(os.environ)
    results = {}
    for root in host_roots:
        os.environ.clear()
        os.environ.update(initial, SAGEMAKER_BASE_DIR=root)
        importlib.reload(environment)  # its paths are read from SAGEMAKER_BASE_DIR when it is imported
        results[os.path.basename(root)] = derive()
    with open(output_path, "w") as handle:
        json.dump(results, handle)


def derive() -> dict:
    captured = {}

    def capture(uri, user_entry_point, args, env_vars=None, capture_error=False, runner_type=None, **_):
        captured.update(uri=uri, user_entry_point=user_entry_point, args=args, env_vars=dict(env_vars),
                        capture_error=capture_error, runner_type=runner_type)

    training.entry_point.run = capture
    training._dns_lookup = lambda host: None  # algo-N names do not resolve here
    before = dict(os.environ)
    env = environment.Environment()
    training.train(env)
    framework_environment = {key: value for key, value in os.environ.items() if before.get(key) != value}

    env_vars = dict(captured["env_vars"])
    env_vars["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")  # entry_point.run adds it (write_env_vars)
    chosen = runner.get(captured["runner_type"], captured["user_entry_point"], captured["args"], env_vars)
    runner_name = {RunnerType.Process: "Process", RunnerType.MPI: "MPI", RunnerType.SMDataParallel: "SMDataParallel",
                   RunnerType.TorchDistributed: "TorchDistributed"}[captured["runner_type"]]
    command = None
    if type(chosen).__name__ != "WorkerRunner":
        command = chosen._create_command()
        if runner_name == "SMDataParallel":
            command = command + process.ProcessRunner._create_command(chosen)
        library = inspect.getfile(gethostname)
        command = [arg.replace(library, GETHOSTNAME_LIBRARY) for arg in command]
    return {
        "sm_variables": env.to_env_vars(),
        "framework_environment": framework_environment,
        "args": captured["args"],
        "runner": runner_name,
        "processes_per_host": chosen._processes_per_host,
        "command": command,
        # Everything the toolkits changed in the environment the launcher starts with.
        "launcher_environment": {key: value for key, value in os.environ.items() if before.get(key) != value},
    }


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
