"""DeepSpeed runs on its CUDA accelerator, as on the instance, with the emulated GPU's memory being the CPU's.

DeepSpeed picks its accelerator from ``DS_ACCELERATOR`` or, unset, from ``torch.cuda.is_available()``: under the
stand-in that is its CUDA accelerator, so a job takes the branches it takes on the GPU instance (device
``cuda:<local rank>``, the NCCL backend, which the stand-in runs on gloo, fp16 and bf16 both supported). Its CPU
accelerator would take other branches and, before the first collective, compile DeepSpeed's shared-memory
communication op in C++ (minutes on a small machine; docs/frameworks.md has the measurement).

Two of the CUDA accelerator's answers are about where tensors are, and there it must say where they live:

* ``current_device_name()``, the device DeepSpeed allocates on and checks its tensors against, names the CPU.
  ZeRO-3 saving a consolidated model (``stage3_gather_16bit_weights_on_model_save``) otherwise stops on
  "Parameter 0 is on cpu but broadcast requires it to be on cuda:0". Allocations go to the CPU either way.
* ``on_accelerator(tensor)`` is True for a tensor on the CPU, which is the emulated GPU's memory; ZeRO-3 would
  otherwise treat its gradient buffers as offloaded to the host. DeepSpeed's own offload (``offload_optimizer``,
  ``offload_param``) can therefore not tell host from GPU memory here.
"""

from __future__ import annotations

import torch

from . import devices, hook


def install() -> None:
    hook.when_imported("deepspeed.accelerator.cuda_accelerator", _tensors_on_cpu)


def _current_device_name(self) -> str:
    return devices.CPU.type


def _on_accelerator(self, tensor: torch.Tensor) -> bool:
    return tensor.device.type in (devices.CPU.type, "cuda")


def _tensors_on_cpu(cuda_accelerator) -> None:
    accelerator = cuda_accelerator.CUDA_Accelerator
    accelerator.current_device_name = _current_device_name
    accelerator.on_accelerator = _on_accelerator
