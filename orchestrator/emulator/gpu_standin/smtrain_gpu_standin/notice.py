"""The one start-of-run notice for a GPU job run on the CPU stand-in.

Torch-free and import-free, so that the emulator (which never imports torch) can import it or load it by path.
"""

NOTICE = (
    "This GPU job runs on the CPU: every training process gets smtrain's CPU stand-in for CUDA, emulating "
    "{num_gpus} x {gpu_name} per host. torch.cuda answers as on the instance; tensors and modules put on a GPU "
    "stay on the CPU; NCCL and smddp run over gloo; {autocast}; streams and "
    "events are synchronous; GPU memory statistics read 0; the profiler records CPU activity only. Not checked "
    "here: custom CUDA and Triton kernels, CUDA graphs, NCCL/EFA behaviour, GPU memory limits, "
    "{unchecked_numerics}, speed."
)
AUTOCAST_BF16 = "CUDA autocast runs as CPU bfloat16 autocast"
AUTOCAST_FLOAT32 = (
    "CUDA autocast regions compute in float32, as this CPU has no native bfloat16 and would emulate it about ten "
    "times slower (tensors and modules the script converts itself keep their dtype; --exact-autocast keeps "
    "bfloat16)"
)


def start_of_run_notice(num_gpus: int, gpu_name: str, autocast_in_float32: bool = False) -> str:
    """The notice for `num_gpus` emulated GPUs of model `gpu_name` per host, as one paragraph."""
    return NOTICE.format(num_gpus=num_gpus, gpu_name=gpu_name,
                         autocast=AUTOCAST_FLOAT32 if autocast_in_float32 else AUTOCAST_BF16,
                         unchecked_numerics="reduced-precision numerics" if autocast_in_float32 else "fp16 numerics")
