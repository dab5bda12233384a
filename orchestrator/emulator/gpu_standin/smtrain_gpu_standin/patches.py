"""Applies every patch of the stand-in, once, right after torch has been imported."""

from __future__ import annotations

from . import (accelerator, amp, attention, collectives, compile_modes, cuda_api, deepspeed_accelerator, device_type,
               devices, distributed, fsdp, placement, profiler, streams, unsupported)
from .env import Settings


def apply(settings: Settings) -> None:
    """Makes this process see ``settings.num_gpus`` GPUs of model ``settings.gpu_name``, all standing in on the
    CPU. The order matters: ``torch.accelerator`` reuses the patched ``torch.cuda`` functions."""
    devices.configure(settings.num_gpus)
    cuda_api.install(settings)
    streams.install()
    accelerator.install()
    placement.install()
    device_type.install()
    amp.install(settings.autocast_in_float32)
    distributed.install()
    collectives.install()
    fsdp.install(settings.autocast_in_float32)
    deepspeed_accelerator.install()
    profiler.install()
    attention.install()
    compile_modes.install()
    unsupported.install()
