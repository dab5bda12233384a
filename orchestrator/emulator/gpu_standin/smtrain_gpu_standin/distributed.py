"""NCCL process groups run over gloo; DistributedDataParallel and DataParallel accept the emulated GPUs.

* ``init_process_group`` and ``new_group``: ``"nccl"``, ``"cuda:nccl"`` or ``"cpu:gloo,cuda:nccl"`` become
  ``"gloo"`` (every tensor is on the CPU, which gloo serves); a CUDA ``device_id`` is checked and dropped.
  No backend means gloo, as torch picks it on a CPU-only build. ``dist.get_backend()`` therefore says ``"gloo"``
  (or ``"smddp"``): torch's own code asks it to pick devices for collectives, so it must tell the truth.
  ``stands_for_nccl(group)`` remembers which groups the script asked NCCL for (no backend included: a GPU build
  picks NCCL for CUDA tensors, and a new group without one inherits the default group's), so that collectives can
  keep NCCL's contract where gloo's differs (``collectives``) and gloo's own where the script asked for gloo.
* Each gloo group runs its collectives one at a time, in the order they were called, as NCCL does on its
  communicator's stream: waiting on an async collective's work therefore means every earlier one on that group has
  finished too (``[dist.all_reduce(t, async_op=True) for t in ts][-1].wait()``). Gloo's default of two worker
  threads runs two async collectives at once, so the last one's wait() could return while an earlier one was still
  writing its tensor.
* ``dist.is_nccl_available()`` is True, so scripts choose NCCL as they do on the instance, and
  ``torch.cuda.nccl.version()`` answers ``NCCL_VERSION``: no NCCL runs here, so it has no real version; this one
  passes every check torch and the frameworks make (DDP's ``bf16_compress_hook`` wants 2.10 or newer) and is
  printed as the version scripts log. torch.cuda.nccl's collectives stay refused (``unsupported.py``).
* ``DistributedDataParallel(model, device_ids=[local_rank], output_device=...)``: torch refuses device ids for a
  module on the CPU, so they are checked against the emulated GPUs and dropped. Its bf16 gradient compression
  hooks (``bf16_compress_hook``, ``bf16_compress_wrapper``), which torch allows only with CUDA and NCCL 2.10+,
  are accepted: gloo reduces bfloat16 tensors (in float32 where its torch's gloo lacks bfloat16, ``collectives``).
* ``nn.DataParallel(model)`` is built over the emulated GPUs as on the instance (``device_ids`` lists them) and
  runs the whole batch through the module on the CPU: the same math as scattering it, except that BatchNorm
  computes its batch statistics over the whole batch instead of per GPU.
* ``nn.SyncBatchNorm`` normalises with each process's own batch statistics, like BatchNorm (torch has no CPU
  kernels for the synchronised ones); a warning says so once.
"""

from __future__ import annotations

import atexit
import datetime
import functools
import inspect
import os
import time
import warnings
import weakref

import torch
import torch.distributed
import torch.distributed.distributed_c10d as c10d
from torch.nn.modules.batchnorm import SyncBatchNorm, _BatchNorm
from torch.nn.parallel import DataParallel, DistributedDataParallel

from . import devices

NCCL_VERSION = (2, 21, 5)

def install() -> None:
    init = _settled_at_exit(_on_gloo(c10d.init_process_group, lambda: True))
    torch.distributed.init_process_group = c10d.init_process_group = init
    torch.distributed.new_group = c10d.new_group = _on_gloo(c10d.new_group, lambda: stands_for_nccl(None))
    torch.distributed.destroy_process_group = c10d.destroy_process_group = _settled_first(c10d.destroy_process_group)
    if hasattr(c10d, "ProcessGroupGloo") and hasattr(c10d, "_new_process_group_helper"):
        c10d._new_process_group_helper = _gloo_in_order(c10d._new_process_group_helper)
    # Only the public name: torch's own modules test c10d.is_nccl_available() before touching ProcessGroupNCCL.
    torch.distributed.is_nccl_available = _nccl_available
    torch.cuda.nccl.version = _nccl_version
    DistributedDataParallel.__init__ = _ddp_init(DistributedDataParallel.__init__)
    if hasattr(DistributedDataParallel, "_check_comm_hook"):
        DistributedDataParallel._check_comm_hook = _bf16_hooks_allowed(DistributedDataParallel._check_comm_hook)
    DataParallel.forward = _data_parallel_forward
    SyncBatchNorm.forward = _sync_batch_norm_forward


def _nccl_version() -> tuple[int, int, int]:
    return NCCL_VERSION


def _settled_at_exit(init):
    """Gloo, standing in for NCCL, can abort the process (SIGABRT, "terminate called without an active
    exception") at exit, which NCCL would not: its worker threads release each finished collective's tensors after
    the collective returns, and one still waiting for the GIL when interpreter finalization begins is ended inside
    a C++ frame. Scripts written for NCCL rarely destroy the group, and destroying it does not stop this when the
    DDP model still holds it. At exit: destroy the group, then yield the GIL to those threads."""

    @functools.wraps(init)
    def init_then_register(*args, **kwargs):
        result = init(*args, **kwargs)
        atexit.unregister(_settle_at_exit)  # once, however often the script initializes
        atexit.register(_settle_at_exit)
        return result

    return init_then_register


# bench/bench_exit_aborts.py (a finished 2-rank DDP script that destroys its group): without this yield 3 of 40
# runs aborted at exit (plain gloo: 7 of 40), with it 0 of 40; an earlier count, 6 of 80 against 0 of 100.
# tests/emulator/gpu_standin/test_exit.py fails without the destroy or the yield.
_EXIT_YIELD_SECONDS = 0.05


def _settle_at_exit() -> None:
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    time.sleep(_EXIT_YIELD_SECONDS)


def _settled_first(destroy):
    """`destroy_process_group` that first yields the GIL to the group's gloo threads. After a collective whose
    future has Python callbacks (the stand-in's bfloat16 and AVG emulation, DDP's bf16/fp16 compression hooks),
    a gloo thread still takes the GIL to release them once the script's wait has returned. Destroying the group
    then drops it, or lets the DDP model that holds it drop it, and gloo's destructor joins that thread while
    holding the GIL: both wait for ever (NCCL's callbacks do not run on such a thread). A 1-rank DDP with
    `bf16_compress_hook`, made and destroyed 300 times in one process, hung every time without the yield."""

    @functools.wraps(destroy)
    def destroy_once_settled(group=None):
        if torch.distributed.is_initialized() and stands_for_nccl(group):
            time.sleep(_EXIT_YIELD_SECONDS)
        return destroy(group)

    return destroy_once_settled


def _nccl_available() -> bool:
    return True


def gloo_for(backend: str | None) -> str | None:
    """The backend that runs `backend` here: gloo for any NCCL backend string, others unchanged."""
    return "gloo" if _names_nccl(backend) else backend


def _names_nccl(backend: str | None) -> bool:
    return backend is not None and "nccl" in str(backend).lower()


_NCCL_GROUPS: weakref.WeakSet = weakref.WeakSet()


def stands_for_nccl(group) -> bool:
    """Whether `group` (None: the default group) is one the script asked NCCL for, which gloo runs here."""
    return (c10d._get_default_group() if group is None else group) in _NCCL_GROUPS


def _on_gloo(create, unnamed_is_nccl):
    """`create` (init_process_group or new_group) on gloo for an NCCL backend, the group remembered as NCCL's;
    `unnamed_is_nccl` says whether a group created without a backend is."""
    signature = inspect.signature(create)

    @functools.wraps(create)
    def create_on_gloo(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        backend = call.arguments.get("backend")
        if "backend" in call.arguments:
            call.arguments["backend"] = gloo_for(backend)
        if call.arguments.get("device_id") is not None and devices.is_gpu(call.arguments["device_id"]):
            call.arguments["device_id"] = None
        group = create(*call.args, **call.kwargs)
        nccl = unnamed_is_nccl() if backend is None else _names_nccl(backend)
        if nccl and group is None:
            _NCCL_GROUPS.add(c10d._get_default_group())
        elif nccl and isinstance(group, c10d.ProcessGroup):  # not NON_GROUP_MEMBER, which a non-member gets
            _NCCL_GROUPS.add(group)
        return group

    return create_on_gloo


@functools.cache
def in_order_gloo() -> type:
    """Gloo's process group (backend) class with one worker thread instead of gloo's default two per device, and
    gloo's defaults otherwise: its collectives run one at a time, in the order they were called."""
    from torch._C._distributed_c10d import ProcessGroupGloo as gloo  # c10d's name is swapped while groups are built

    class InOrderGloo(gloo):
        def __init__(self, store, rank, size, timeout=datetime.timedelta(minutes=30)) -> None:
            options = gloo._Options()
            interfaces = os.environ.get("GLOO_SOCKET_IFNAME")  # what gloo's own constructor reads
            options._devices = ([gloo.create_device(interface=name) for name in interfaces.split(",")]
                                if interfaces else [gloo.create_default_device()])
            options._timeout = timeout
            options._threads = 1
            super().__init__(store, rank, size, options)

    return InOrderGloo


def _gloo_in_order(new_process_group_helper):
    """Torch builds every group's gloo backend in `new_process_group_helper` by calling ``c10d.ProcessGroupGloo``
    (store, rank, size, timeout); there it builds `in_order_gloo()` instead. The name is restored afterwards, so
    torch's isinstance checks elsewhere see gloo's own class (of which the in-order one is a subclass)."""

    @functools.wraps(new_process_group_helper)
    def with_in_order_gloo(*args, **kwargs):
        gloo = c10d.ProcessGroupGloo
        c10d.ProcessGroupGloo = in_order_gloo()
        try:
            return new_process_group_helper(*args, **kwargs)
        finally:
            c10d.ProcessGroupGloo = gloo

    return with_in_order_gloo


def _ddp_init(init):
    @functools.wraps(init)
    def without_device_ids(self, module, device_ids=None, output_device=None, *args, **kwargs) -> None:
        for device in [*(device_ids or []), *([] if output_device is None else [output_device])]:
            devices.placement(device)  # checks the index
        init(self, module, None, None, *args, **kwargs)

    return without_device_ids


_CUDA_ONLY_HOOKS = ("bf16_compress_hook", "bf16_compress_wrapper_hook")


def _bf16_hooks_allowed(check):
    """DDP's hook check, with torch's CUDA-build test skipped for the bf16 hooks (its other checks still run)."""

    @functools.wraps(check)
    def check_on_the_standin(self, hook) -> None:
        if getattr(hook, "__name__", None) in _CUDA_ONLY_HOOKS:
            original = hook
            # The same signature (inspect follows __wrapped__) under a name torch does not single out.
            hook = functools.wraps(original)(lambda *args, **kwargs: original(*args, **kwargs))
            hook.__name__ = "smtrain_standin_bf16_hook"
        check(self, hook)

    return check_on_the_standin


def _data_parallel_forward(self, *inputs, **kwargs):
    with torch.autograd.profiler.record_function("DataParallel.forward"):
        return self.module(*inputs, **kwargs)


def _sync_batch_norm_forward(self, input):
    if self.training and _world_size(self.process_group) > 1:
        warnings.warn("smtrain CPU stand-in: SyncBatchNorm uses each process's own batch statistics here (no CPU "
                      "kernels for synchronised ones); the instance's GPUs would share them across processes.",
                      stacklevel=2)
    return _BatchNorm.forward(self, input)


def _world_size(group) -> int:
    return torch.distributed.get_world_size(group) if torch.distributed.is_initialized() else 1
