"""What a SageMaker PyTorch training container writes around a script, one CloudWatch event per line, as the
sagemaker-training-toolkit prints it (shortened): shared by the tests that read a failed job's streams."""

from __future__ import annotations

TORCHRUN_COMMAND = ("torchrun --nnodes 2 --nproc_per_node 4 --master_addr algo-1 --master_port 7777 --node_rank {node} "
            "train.py --epochs 3")
PYTHON = "/opt/conda/bin/python3.11 train.py --epochs 3"


def toolkit_start(command: str, installs: list[str] | None = None) -> list[str]:
    """The toolkit's lines before the script: its imports, an install of requirements.txt where `installs` gives
    pip's lines, the environment, and the command it invokes."""
    installing = "2026-11-26 10:40:01,000 sagemaker-training-toolkit INFO     Installing dependencies from requirements"
    install = ([installing, "/opt/conda/bin/python3.11 -m pip install -r requirements.txt", *installs]
               if installs is not None else [])
    return [
        "bash: cannot set terminal process group (-1): Inappropriate ioctl for device",
        "bash: no job control in this shell",
        "2026-11-26 10:40:00,100 sagemaker-training-toolkit INFO     Imported framework sagemaker_pytorch_container",
        "2026-11-26 10:40:00,200 sagemaker_pytorch_container.training INFO     Block until all host DNS lookups",
        "2026-11-26 10:40:00,300 sagemaker_pytorch_container.training INFO     Invoking user training script.",
        *install,
        "2026-11-26 10:40:05,000 sagemaker-training-toolkit INFO     Invoking user script",
        "Training Env:", "{", '    "current_host": "algo-1",', '    "hosts": ["algo-1", "algo-2"]', "}",
        "Environment variables:", 'SM_HOSTS=["algo-1","algo-2"]', "SM_NUM_GPUS=4",
        "Invoking script with the following command:", "", command, "",
    ]


def toolkit_failure(exit_code: int, command: str = PYTHON, error_class: str = "ExecuteUserScriptError") -> list[str]:
    """The toolkit's report of a script (or an install) that failed: the lines it logs and SageMaker's
    FailureReason repeats."""
    return [
        "2026-11-26 10:41:02,000 sagemaker-training-toolkit INFO     Waiting for the process to finish",
        f"2026-11-26 10:41:02,000 sagemaker-training-toolkit INFO     Done waiting. Received {exit_code} from it.",
        "2026-11-26 10:41:02,001 sagemaker-training-toolkit ERROR    Reporting training FAILURE",
        f"2026-11-26 10:41:02,001 sagemaker-training-toolkit ERROR    {error_class}:",
        f"ExitCode {exit_code}", 'ErrorMessage ""', f'Command "{command}"',
        f"2026-11-26 10:41:02,001 sagemaker-training-toolkit ERROR    Encountered exit_code {exit_code}",
    ]


def failure_reason(exit_code: int, command: str = PYTHON, error_class: str = "ExecuteUserScriptError") -> str:
    """DescribeTrainingJob's FailureReason for the toolkit's report above."""
    return f'AlgorithmError: {error_class}:\nExitCode {exit_code}\nErrorMessage ""\nCommand "{command}", exit code: ' \
           f"{exit_code}"


def steps(count: int) -> list[str]:
    """A script's progress lines."""
    return [f"epoch=1 step={step}/900 train_loss={1 / (step + 1):.4f}" for step in range(1, count + 1)]


SITE = "/opt/conda/lib/python3.11/site-packages"
TORCH_SAVE_DISK_FULL = f"""\
Traceback (most recent call last):
  File "{SITE}/torch/serialization.py", line 628, in save
    _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)
  File "{SITE}/torch/serialization.py", line 862, in _save
    zip_file.write_record(name, storage, num_bytes)
RuntimeError: [enforce fail at inline_container.cc:764] . PytorchStreamWriter failed writing file data/74: file write failed

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/ml/code/train.py", line 120, in <module>
    torch.save(state, f"/opt/ml/checkpoints/step_{{step}}.pt")
  File "{SITE}/torch/serialization.py", line 627, in save
    with _open_zipfile_writer(f) as opened_zipfile:
  File "{SITE}/torch/serialization.py", line 475, in __exit__
    self.file_like.write_end_of_file()
RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 1641891200 vs 1641891088
""".splitlines()
"""torch.save into a full volume: neither exception says `No space left on device`."""


# torchrun's rank 0 when the kernel's OOM killer ended one of its DataLoader workers (torch 2.3, shortened): the
# error it raises last only says the worker exited.
DATALOADER_WORKER_KILLED = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
[rank0]:     data = self._data_queue.get(timeout=timeout)
[rank0]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
[rank0]:     _error_if_any_worker_fails()
[rank0]: RuntimeError: DataLoader worker (pid 4567) is killed by signal: Killed.
[rank0]:
[rank0]: The above exception was the direct cause of the following exception:
[rank0]:
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/ml/code/train.py", line 88, in <module>
[rank0]:     main()
[rank0]:   File "/opt/ml/code/train.py", line 60, in main
[rank0]:     for batch in loader:
[rank0]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1146, in _try_get_data
[rank0]:     raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e
[rank0]: RuntimeError: DataLoader worker (pid(s) 4567) exited unexpectedly
""".splitlines()


# transformers 3.x's from_pretrained for a model directory without config.json (Morizeyao/GPT2-Chinese#169; its script
# path as the toolkit runs it): the exception it raised first is a bare `OSError`, raised again while handling it with
# the words meant for the user.
TRANSFORMERS_CONFIG_NOT_FOUND = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.6/site-packages/transformers/configuration_utils.py", line 242, in get_config_dict
    raise EnvironmentError
OSError

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/ml/code/generate.py", line 222, in <module>
    main()
  File "/opt/ml/code/generate.py", line 165, in main
    model = GPT2LMHeadModel.from_pretrained(args.model_path)
  File "/opt/conda/lib/python3.6/site-packages/transformers/modeling_utils.py", line 604, in from_pretrained
    **kwargs,
  File "/opt/conda/lib/python3.6/site-packages/transformers/configuration_utils.py", line 200, in from_pretrained
    config_dict, kwargs = cls.get_config_dict(pretrained_model_name_or_path, **kwargs)
  File "/opt/conda/lib/python3.6/site-packages/transformers/configuration_utils.py", line 251, in get_config_dict
    raise EnvironmentError(msg)
OSError: Can't load config for 'model/final_model'. Make sure that:
""".splitlines()


def nccl_error(rank: int, what: str, *last_error: str) -> list[str]:
    """A DistBackendError as torch 2.3 prints it under `[rankN]:`: NCCL's message goes on over several lines."""
    return [f"[rank{rank}]: {line}" for line in [
        "Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 40, in <module>',
        "    model = DDP(model, device_ids=[local_rank])",
        (f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
         f"{what}, NCCL version 2.20.5"), *last_error]]


# Rank 5 ran out of GPU memory inside NCCL's setup of DDP; rank 0, on the other host, lost it.
NCCL_OUT_OF_MEMORY = nccl_error(5, "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                                "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
                                "Cuda failure 'out of memory'")
NCCL_PEER_LOST = nccl_error(0, "remote process exited or there was a network error",
                            ("ncclRemoteError: A call failed possibly due to a network error or a remote process "
                             "exiting prematurely."), "Last error:",
                            "socketProgress: Connection closed by remote peer algo-2<52322>")


def nccl_watchdog_timeout(rank: int, ran_ms: int, operation: str = "ALLREDUCE", sequence: int = 42) -> list[str]:
    """One rank's NCCL watchdog timeout as torch 2.5 prints it (a real log's lines, shortened): its `[rankN]:`
    error lines, then the C++ abort, unprefixed, that takes the process down (torchrun then reports exit -6)."""
    work = (f"WorkNCCL(SeqNum={sequence}, OpType={operation}, NumelIn=25557032, NumelOut=25557032, "
            "Timeout(ms)=1800000)")
    said = f"[Rank {rank}] Watchdog caught collective operation timeout: {work} ran for {ran_ms} milliseconds before " \
           "timing out."
    group = f"[PG ID 0 PG GUID 0 Rank {rank}]"
    raised = "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 " \
             "(most recent call first):"
    frame = (f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7b99599e31b6 in {SITE}/torch/"
             "lib/libc10.so)")
    return [
        f"[rank{rank}]:[E1126 11:11:01.{rank}26415540 ProcessGroupNCCL.cpp:629] {said}",
        (f"[rank{rank}]:[E1126 11:11:01.484903450 ProcessGroupNCCL.cpp:2168] {group}  failure detected by watchdog "
         f"at work sequence id: {sequence} PG status: last enqueued work: {sequence}, last completed work: "
         f"{sequence - 1}"),
        (f"[rank{rank}]:[E1126 11:11:01.484959605 ProcessGroupNCCL.cpp:681] [Rank {rank}] Some NCCL operations have "
         "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
         "corrupted/incomplete data."),
        (f"[rank{rank}]:[E1126 11:11:01.484966856 ProcessGroupNCCL.cpp:695] [Rank {rank}] To avoid data "
         "inconsistency, we are taking the entire process down."),
        (f"[rank{rank}]:[E1126 11:11:01.486305774 ProcessGroupNCCL.cpp:1895] {group} Process group watchdog thread "
         f"terminated with exception: {said}"),
        raised, frame, "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {group} Process group watchdog thread terminated with exception: {said}",
        raised, frame, "",
    ]


_ERROR_NAMES = ("Exception", "Error", "Invalid requirement")
"""What starts the toolkit's ErrorMessage: a line naming one of Python's error classes (its `_PYTHON_ERRORS_`, all
of whose names end in these; sagemaker_training/__init__.py)."""
FAILURE_REASON_LIMIT = 1024
"""SageMaker keeps the first 1024 characters of a FailureReason (DescribeTrainingJob's FailureReason: at most
1024)."""


def toolkit_failure_reason(lines: list[str], exit_code: int = 1, command: str = PYTHON,
                           kept: int = FAILURE_REASON_LIMIT) -> str:
    """The FailureReason SageMaker keeps for a script that printed `lines` and failed, as the toolkit builds it
    (sagemaker_training/process.py, watch() and check_error()): its ErrorMessage starts at the first line that names
    an error class, whatever that line is (in huggingface/notebooks#136 a frame's code line, `raise
    EnvironmentError(msg)`), and holds every line after it, each stripped of spaces and colons at its ends (so
    `Traceback (most recent call last)` loses its colon), without repeats; SageMaker then cuts the whole reason."""
    start = next((index for index, line in enumerate(lines) if any(name in line for name in _ERROR_NAMES)), len(lines))
    message = "\n ".join(dict.fromkeys(line.strip(" :\n") for line in lines[start:]))
    return failure_reason(exit_code, command).replace('ErrorMessage ""', f'ErrorMessage "{message}"')[:kept]
