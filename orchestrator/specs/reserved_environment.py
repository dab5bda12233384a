"""Environment names a job's `environment` cannot usefully hold: the training toolkit's and smtrain's own.

The SageMaker training toolkit writes its SM_* variables over the container's environment before the entry point
starts (docs/sagemaker-contract.md §4), so a value the spec gives one never reaches the script, silently; an
SMTRAIN_* name is smtrain's, which `smtrain local` sets itself and SageMaker never does, so a script reading it
behaves one way here and another there. Both are refused with the setting that does what the user meant.
"""

from __future__ import annotations

from orchestrator.contract import SM_CHANNEL_PREFIX, SM_HP_PREFIX, SMTRAIN_PREFIX, TOOLKIT_SET_VARIABLES

_MEANT = {
    "SM_NUM_GPUS": "to run fewer processes per host, set distribution.processes_per_host (mode mpi) or pick an "
                   "instance with fewer GPUs",
    "SM_MODEL_DIR": "save the model where SM_MODEL_DIR points (/opt/ml/model), which SageMaker uploads as "
                    "model.tar.gz",
    "SM_OUTPUT_DATA_DIR": "write to where SM_OUTPUT_DATA_DIR points (/opt/ml/output/data), which SageMaker uploads "
                          "as output.tar.gz",
    "SM_HOSTS": "the hosts are instance.count (or instance.groups)",
    "SM_CURRENT_HOST": "the hosts are instance.count (or instance.groups)",
}


def reserved_name_problem(name: str) -> tuple[str, str] | None:
    """(message, fix) when `name` is the toolkit's or smtrain's, else None."""
    if name.startswith(SM_CHANNEL_PREFIX):
        channel = name.removeprefix(SM_CHANNEL_PREFIX).lower() or "train"
        return (f"{name}: the training toolkit sets {SM_CHANNEL_PREFIX}<NAME> for each channel of inputs, replacing "
                "a value given here, and scripts read these variables as the job's channels",
                f"remove it, and add the channel under inputs, e.g. inputs: {{{channel}: s3://my-bucket/{channel}/}}")
    if name.startswith(SM_HP_PREFIX):
        hyperparameter = name.removeprefix(SM_HP_PREFIX).lower() or "lr"
        return (f"{name}: the training toolkit sets {SM_HP_PREFIX}<NAME> for each hyperparameter, replacing a "
                "value given here", f"remove it, and set it under hyperparameters, e.g. {hyperparameter}: ...")
    if name in TOOLKIT_SET_VARIABLES:
        own = f"MY_{name.removeprefix('SM_')}"
        return (f"{name} is set by the SageMaker training toolkit in every job, replacing the value given here",
                f"remove it; {_MEANT[name]}" if name in _MEANT else
                f"remove it, or give your own setting a name of its own, e.g. {own}")
    if name.startswith(SMTRAIN_PREFIX):
        return (f"{name}: {SMTRAIN_PREFIX}* names are smtrain's own; smtrain local sets some of them itself, and on "
                "SageMaker the script would see a value smtrain never sets",
                f"rename it, e.g. MY_{name.removeprefix(SMTRAIN_PREFIX) or 'SETTING'}")
    return None
