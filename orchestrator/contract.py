"""Every name that crosses from smtrain into the training container, defined once.

The entrypoints (`entrypoints/`, the SageMaker ``source_dir``) cannot import this package: they run inside
SageMaker's PyTorch images. They define the same names on their side, and ``tests/contract`` checks both sides
agree, so a rename on one side fails the suite instead of a job.
"""

from __future__ import annotations

# Paths inside the container. The toolkit roots every path at /opt/ml, or at $SAGEMAKER_BASE_DIR when set;
# the local emulator sets it to the emulated host's directory.
OPT_ML = "/opt/ml"
SAGEMAKER_BASE_DIR = "SAGEMAKER_BASE_DIR"
DEFAULT_CHECKPOINT_DIR = "/opt/ml/checkpoints"

# Variables the SageMaker training toolkit sets (docs/sagemaker-contract.md §4).
SM_HOSTS = "SM_HOSTS"
SM_CURRENT_HOST = "SM_CURRENT_HOST"
SM_MODEL_DIR = "SM_MODEL_DIR"
SM_OUTPUT_DIR = "SM_OUTPUT_DIR"
SM_OUTPUT_DATA_DIR = "SM_OUTPUT_DATA_DIR"
SM_CHANNEL_PREFIX = "SM_CHANNEL_"
SM_NUM_GPUS = "SM_NUM_GPUS"
SM_RESOURCE_CONFIG = "SM_RESOURCE_CONFIG"
SM_TRAINING_ENV = "SM_TRAINING_ENV"
SM_FRAMEWORK_PARAMS = "SM_FRAMEWORK_PARAMS"
SM_HP_PREFIX = "SM_HP_"
# Every variable the toolkit sets before the entry point starts, replacing any value the job's Environment gave:
# `Environment.to_env_vars` (SM_ + each key, written over os.environ) and the three it assigns itself. A test reads
# them from the installed toolkit's source. SM_CHANNEL_<NAME> and SM_HP_<NAME> are set once per channel and
# hyperparameter.
TOOLKIT_SET_VARIABLES = frozenset({
    *(f"SM_{key.upper()}" for key in (
        "hosts", "network_interface_name", "hps", "user_entry_point", "framework_params", "resource_config",
        "input_data_config", "output_data_dir", "channels", "current_host", "current_instance_type",
        "current_instance_group", "current_instance_group_hosts", "instance_groups", "instance_groups_dict",
        "distribution_instance_groups", "is_hetero", "module_name", "log_level", "framework_module", "input_dir",
        "input_config_dir", "output_dir", "num_cpus", "num_gpus", "num_neurons", "model_dir", "module_dir",
        "training_env", "user_args", "output_intermediate_dir", "topology")),
    "CURRENT_HOST", "SAGEMAKER_JOB_NAME", "SAGEMAKER_REGION",
})
# Variables SageMaker itself sets in every training container, beside the job's Environment
# (docs/sagemaker-contract.md §4): the job's name and ARN, and the job's region as AWS_REGION, which the training
# toolkit reads before SAGEMAKER_REGION and SDK v2's local mode sets in its containers (a contract test reads both).
# Nobody sets AWS_DEFAULT_REGION, the one boto3 reads: code needing a region reads AWS_REGION or names one.
TRAINING_JOB_NAME = "TRAINING_JOB_NAME"
TRAINING_JOB_ARN = "TRAINING_JOB_ARN"
AWS_REGION = "AWS_REGION"
AWS_DEFAULT_REGION = "AWS_DEFAULT_REGION"
# What the execution role does for the container's output to reach CloudWatch Logs (the log group
# /aws/sagemaker/TrainingJobs, one stream per host): `smtrain check` simulates these, and `smtrain status` names
# them for a job training without a log line, so the two never name different lists.
ROLE_LOG_WRITES = ("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents")
# smtrain's own variables (the emulator's, the CLI's settings): a job's environment never holds them.
SMTRAIN_PREFIX = "SMTRAIN_"
# The hyperparameter flag the SDK sends for smddp (and pytorchddp, which it rewrites into smddp).
SMDDP_ENABLED_FLAG = "sagemaker_distributed_dataparallel_enabled"
# The channel the shared trainer reads real data from (SM_CHANNEL_TRAIN).
TRAIN_CHANNEL = "train"

# Rendezvous: set by the PyTorch toolkit (MASTER_*) and by torchrun (the rest).
MASTER_ADDR = "MASTER_ADDR"
MASTER_PORT = "MASTER_PORT"
DEFAULT_MASTER_PORT = 7777
TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")
# The interface resourceconfig.json names (network_interface_name), which the toolkits give NCCL and Open MPI.
NETWORK_INTERFACE = "eth0"
# What the PyTorch toolkit's train() writes over the job's Environment on every host, in every mode, before it
# picks the launcher (_set_distributed_environment, _set_nccl_environment): unlike TOOLKIT_SET_VARIABLES these are
# warned about, not refused, since the same value is harmless. MASTER_ADDR is the master host's name and
# NCCL_SOCKET_IFNAME the host's interface; the rest have fixed values. A test reads them from the installed
# toolkit's source.
PYTORCH_TOOLKIT_VALUES = {MASTER_PORT: str(DEFAULT_MASTER_PORT), "NCCL_IB_DISABLE": "1", "NCCL_DEBUG": "WARN"}
PYTORCH_TOOLKIT_VARIABLES = frozenset({MASTER_ADDR, "NCCL_SOCKET_IFNAME", *PYTORCH_TOOLKIT_VALUES})
# The NCCL_DEBUG mpirun passes every rank (modes mpi, smddp, pytorchddp) where custom_mpi_options names none:
# the default of the toolkit's --NCCL_DEBUG option (sagemaker_training mpi/smdataparallel _parse_custom_mpi_options).
MPIRUN_NCCL_DEBUG = "INFO"

# Open MPI's per-rank variables (mpi, pytorchddp and smddp modes launch through mpirun).
OMPI_VARS = (
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
)

# SMDDP's launcher (smddp and pytorchddp modes), docs/smddp-environment.md: the toolkit's SMDataParallel runner
# exports the first four to every rank; SMDDP's smddprun gives each rank the last (the CPU stand-in sets it here).
SMDDP_USE_SINGLENODE = "SMDATAPARALLEL_USE_SINGLENODE"
SMDDP_USE_HOMOGENEOUS = "SMDATAPARALLEL_USE_HOMOGENEOUS"
SMDDP_SERVER_ADDR = "SMDATAPARALLEL_SERVER_ADDR"
SMDDP_SERVER_PORT = "SMDATAPARALLEL_SERVER_PORT"
SMDDP_LOCAL_RANK = "SMDATAPARALLEL_LOCAL_RANK"

# Hyperparameters of the shared entry point `entrypoints/train.py` (passed as `--key value`).
HYPERPARAMETERS = frozenset(
    {
        "trainer",
        "model",
        "mlp-hidden",
        "mlp-layers",
        "epochs",
        "batch-size",
        "lr",
        "optimizer",
        "seed",
        "num-samples",
        "grad-accum",
        "precision",
        "num-workers",
        "checkpoint-dir",
        "checkpoint-every",
        "log-every",
        "simulate-step-seconds",
        "collective-timeout-seconds",
        "zero-stage",
        "num-stages",
        "pipeline-chunks",
        "prefetch",
    }
)
TRAINERS = ("auto", "dp", "ddp", "gloo", "fsdp", "model_parallel")
MODELS = ("linear", "regression", "convnet", "mlp", "resnet50")
# The trainers that offer each ZeRO stage (`zero-stage`); train.py exits 2 on any other pairing.
ZERO_STAGE_TRAINERS = {1: ("ddp", "gloo"), 2: ("fsdp",), 3: ("fsdp",)}

# The metric line rank 0 prints, e.g. `epoch=1 step=40/96 train_loss=0.123456 samples_per_sec=1520.3`, and the
# formats scripts people write print: `loss=0.42`, `loss: 0.42`, transformers' `{'loss': 0.69, 'learning_rate':
# 5e-05, 'epoch': 1.0}` and `{'eval_loss': ...}` (transformers 5 quotes the numbers: `{'loss': '0.69', ...}`),
# Lightning's bar `Epoch 0: ... loss=0.693` (`train_loss_step=`) and its ModelCheckpoint(verbose=True) line
# `Epoch 0, global step 4: 'val_loss' reached 0.69315 (best 0.69315), saving model to ...` (lightning 2.6.6,
# model_checkpoint.py), and the table rows of pytorch/examples' word_language_model/main.py (@cd01f93, copied by
# the SageMaker LSTM example) `| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.60 | loss  6.89 | ...`
# and `| end of epoch   1 | time: 51.32s | valid loss  5.89 | ...`, whose cells hold a label, spaces and a number,
# and karpathy/nanoGPT's train.py (@3adf61e): `iter 3: loss 2.7543, time 115.87ms, mfu -100.00%` every log_interval
# and `step 3: train loss 2.7598, val loss 2.7507` at each eval (its train split's loss estimated then, as
# eval:train_loss: a per-step train loss printed `step 3: train loss 0.4` alone is no eval, nor read as one).
# SageMaker applies these regexes to the job's log (docs/sagemaker-contract.md §11), so they must not be anchored:
# MPI prefixes every line with `[1,mpirank:0,algo-1]<stdout>:`. RE2 has no lookbehind: `(?:^|[^A-Za-z0-9_])`
# keeps `val_loss` out of train:loss, and a cell's label starts at its `|` (`| valid loss` is no `| loss`).
_NUMBER = r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
_KEY_START = r"(?:^|[^A-Za-z0-9_])"
_SEPARATOR = r"['\"]?\s*[=:]\s*['\"]?"
_LOSS_SEPARATOR = r"(?:" + _SEPARATOR + r"|' reached )"
_CELL = r"\|\s*"
_EVAL_TRAIN_LOSS = _KEY_START + r"train loss "
_EVAL_VAL_LOSS = r", val loss "
DEFAULT_METRIC_DEFINITIONS = (
    {"Name": "train:loss", "Regex": r"(?:" + _KEY_START + r"(?i:train_)?(?i:loss)(?:_step)?" + _LOSS_SEPARATOR
                                    + r"|" + _CELL + r"loss\s+|" + _KEY_START + r"iter [0-9]+: loss )" + _NUMBER},
    {"Name": "eval:loss", "Regex": r"(?:" + _KEY_START + r"(?i:eval|val|validation)_loss" + _LOSS_SEPARATOR
                                   + r"|" + _CELL + r"valid loss\s+|" + _EVAL_TRAIN_LOSS + r"[-+0-9.eE]+"
                                   + _EVAL_VAL_LOSS + r")" + _NUMBER},
    {"Name": "train:learning_rate", "Regex": r"(?:" + _KEY_START + r"(?:learning_rate|lr)" + _SEPARATOR
                                             + r"|" + _CELL + r"lr\s+)" + _NUMBER},
    {"Name": "train:samples_per_sec", "Regex": r"samples_per_sec=([0-9.eE+]+)"},
    {"Name": "train:epoch", "Regex": r"(?:" + _KEY_START + r"(?:['\"]?epoch" + _SEPARATOR + r"|Epoch )|" + _CELL
                                     + r"(?:end of )?epoch\s+)" + _NUMBER},
    {"Name": "eval:train_loss", "Regex": _EVAL_TRAIN_LOSS + _NUMBER + _EVAL_VAL_LOSS},
)
METRICS_JSONL = "metrics.jsonl"
MODEL_STATE_FILE = "model.pt"
MODEL_METADATA_FILE = "model.json"
FAILURE_FILE = "failure"
SUCCESS_FILE = "success"
# The file at the top of source_dir that the toolkit installs with pip before the entry point starts.
REQUIREMENTS_FILE = "requirements.txt"
# A function job's entry point (function_jobs/): the root-cause reader skips its frame as a launcher's.
FUNCTION_RUNNER = "smtrain_remote_runner.py"

# The file `smtrain local` writes at the root of every run directory. A directory holding it is never packed into
# a source tarball: a run directory often sits inside source_dir and holds logs, outputs and per-host files.
RUN_MARKER_FILE = ".smtrain-run"
