"""FSDP v1 (``FullyShardedDataParallel``, what ``Trainer --fsdp`` and Accelerate's FSDP plugin wrap with) and FSDP2
(``fully_shard``) compute on the CPU that stands in for their GPU.

FSDP v1 picks its device module (``torch.cuda``) from the current accelerator when the module is on the CPU; the
stand-in leaves torch's own ``torch._C._get_accelerator()`` answering CPU (``barrier`` and the default backend
read it too, and must get gloo's CPU), and hands FSDP v1 the current emulated GPU instead. FSDP v1 takes its
compute device from the module's parameters or, for a module on the CPU, from
``torch.device(torch.cuda.current_device())``, and later insists that every flat parameter lives there ("An
FSDP-managed module unexpectedly has parameters on cpu"). Under the stand-in tensors asked onto ``cuda:N`` live
on the CPU, so the compute device it settles on is the CPU, after torch's own checks of ``device_id`` against the
current GPU. FSDP2 takes its device from its mesh: ``cuda:<current>`` for a CUDA mesh (``init_device_mesh("cuda",
...)``), and asserts that the parameters are there; for a CUDA mesh it is the CPU too.

FSDP2's ``MixedPrecisionPolicy`` is a precision policy, as autocast is: where the stand-in computes CUDA autocast
regions in float32 (a CPU without native bfloat16, docs/gpu-standin.md), a policy's reduced ``param_dtype``
computes in float32 too, for the same reason (bfloat16 emulated in software costs about ten times as much). Its
reduced ``output_dtype`` goes with it: the outputs it would cast feed layers whose parameters are then float32
(Accelerate, and the Trainer through it, asks for ``output_dtype=bfloat16`` with ``bf16``; kept, the next layer
fails with "mat1 and mat2 must have the same dtype"). ``reduce_dtype`` stays as asked: it is the precision of the
gradients' reduction, not of the compute.

torch 1.x's FSDP v1 (Debian's 1.13) asks its own ``_get_compute_device`` method, which the CPU answers here in the
same way. On Python 3.11 and later its import fails before any of that: the sharded-tensor metadata it imports
gives a dataclass field an instance as default, which Python 3.11 refuses ("mutable default <class
'...TensorProperties'> for field tensor_properties is not allowed: use default_factory"). That module is loaded
with torch 2.0's fix, a default_factory, which makes the same default for every instance.
"""

from __future__ import annotations

import functools
import importlib.machinery
import sys

import torch

from . import devices, hook


def install(policies_in_float32: bool = False) -> None:
    if policies_in_float32:
        hook.when_imported("torch.distributed.fsdp._fully_shard._fsdp_api", _policy_in_float32)
    hook.when_imported("torch.distributed.fsdp._init_utils", _device_handle_for_cuda)
    hook.when_imported("torch.distributed.fsdp._init_utils", _compute_on_cpu)
    hook.when_imported("torch.distributed.fsdp._fully_shard._fsdp_init", _mesh_device_on_cpu)
    hook.when_imported("torch.distributed.fsdp.fully_sharded_data_parallel", _torch1_compute_on_cpu)
    if sys.version_info >= (3, 11) and _METADATA not in sys.modules:
        sys.meta_path.insert(0, _Torch1MetadataFix())


_METADATA = "torch.distributed._shard.sharded_tensor.metadata"
_MUTABLE_DEFAULT = ("field(default=TensorProperties())", "field(default_factory=TensorProperties)")


class _Torch1MetadataFix:
    """Finds torch 1.x's sharded-tensor metadata with the other finders, and runs its source with torch 2.0's
    fix for Python 3.11 (torch 2's source lacks the default it replaces, and runs as it is)."""

    def find_spec(self, name, path, target=None):
        if name != _METADATA:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        source = spec.loader.get_source(name) if spec is not None and hasattr(spec.loader, "get_source") else None
        if source is not None and _MUTABLE_DEFAULT[0] in source:
            fixed = compile(source.replace(*_MUTABLE_DEFAULT), spec.origin, "exec")
            spec.loader.exec_module = lambda module: exec(fixed, module.__dict__)
        return spec


def _device_handle_for_cuda(init_utils) -> None:
    init_device_handle = init_utils._init_device_handle

    @functools.wraps(init_device_handle)
    def for_cuda(state, module, ignored_params, device_id):
        if device_id is None and all(param.device.type in ("cpu", "meta") for param in module.parameters()):
            device_id = torch.device("cuda", devices.current())  # what the accelerator gives on the instance
        return init_device_handle(state, module, ignored_params, device_id)

    init_utils._init_device_handle = for_cuda


def _compute_on_cpu(init_utils) -> None:
    get_compute_device = init_utils._get_compute_device

    @functools.wraps(get_compute_device)
    def on_cpu(module, ignored_params, device_from_device_id, rank, device_handle):
        device = get_compute_device(module, ignored_params, None, rank, device_handle)
        if device_from_device_id is not None and devices.is_gpu(device_from_device_id):
            devices.placement(device_from_device_id)  # its index checked, as CUDA would
        return devices.CPU if devices.is_gpu(device) else device

    init_utils._get_compute_device = on_cpu


def _torch1_compute_on_cpu(fully_sharded) -> None:
    fsdp = fully_sharded.FullyShardedDataParallel
    if not hasattr(fsdp, "_get_compute_device"):  # torch 2 asks _init_utils (_compute_on_cpu)
        return
    get_compute_device = fsdp._get_compute_device

    @functools.wraps(get_compute_device)
    def on_cpu(self, module, ignored_params, device_from_device_id):
        device = get_compute_device(self, module, ignored_params, None)
        if device_from_device_id is not None and devices.is_gpu(device_from_device_id):
            devices.placement(device_from_device_id)  # its index checked, as CUDA would
        return devices.CPU if devices.is_gpu(device) else device

    fsdp._get_compute_device = on_cpu


def _mesh_device_on_cpu(fsdp_init) -> None:
    get_device_from_mesh = fsdp_init._get_device_from_mesh

    @functools.wraps(get_device_from_mesh)
    def on_cpu(mesh):
        return devices.placement(get_device_from_mesh(mesh))

    fsdp_init._get_device_from_mesh = on_cpu


def _policy_in_float32(fsdp_api) -> None:
    policy = fsdp_api.MixedPrecisionPolicy
    init = policy.__init__

    @functools.wraps(init)
    def in_float32(self, *args, **kwargs):
        init(self, *args, **kwargs)
        for field in ("param_dtype", "output_dtype"):
            if getattr(self, field) in (torch.bfloat16, torch.float16):
                object.__setattr__(self, field, None)  # a frozen dataclass: the parameters' own float32

    policy.__init__ = in_float32
