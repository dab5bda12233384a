"""The collectives keep NCCL's contract on the gloo group that stands in for it.

Frameworks call collectives as NCCL defines them, and gloo (torch 2.13) differs in these places; the rest
(``reduce_scatter_tensor``, ``all_to_all_single`` with uneven splits, ``ReduceOp.AVG`` of floats, the coalescing
manager, the object collectives, ``barrier(device_ids=...)``) gloo already serves as NCCL does:

* ``all_gather_into_tensor`` into an output of any shape holding world x numel elements (Accelerate's gather
  passes a flat one for a 2-D input; FSDP a stacked ``(world, ...)`` one): gloo takes only the concatenation along
  dim 0. The output is viewed as that concatenation, which has the same memory layout, so the call stays one
  native collective (async handles and coalescing unchanged). Its input may require grad (a parameter, or a
  clone of one: Accelerate's gather of a model's weights): NCCL only reads it, while gloo copies it into views of
  the output that it made without grad and fails ("A view was created in no_grad mode and is being modified
  inplace"). The input is passed detached, the same memory; the collective records no autograd on NCCL either.
* ``_coalescing_manager(device=...)`` (the coalesced forms): with a device, torch asks the backend to coalesce
  itself, which gloo does not implement ("Backend gloo does not implement startCoalescing"); without one, torch
  coalesces all_reduce, all_gather_into_tensor and reduce_scatter_tensor itself (one call to gloo for all of them,
  one work handle), which gloo serves. The device is dropped.
* ``ReduceOp.PREMUL_SUM`` (``dist._make_nccl_premul_sum(factor)``, FSDP's gradient pre-division): each rank's
  input is multiplied by the factor, then summed (``ReduceOp.SUM``), which is what NCCL computes.
* bfloat16 under a torch whose gloo lacks it (such as Debian's 1.13: "Invalid scalar type" from
  all_reduce, reduce, broadcast, all_gather, all_to_all_single, gather, scatter and all_reduce_coalesced; DDP's
  ``bf16_compress_hook`` all-reduces in bfloat16): on a group the script asked NCCL for, which reduces bfloat16, the
  call runs on float32 copies of its bfloat16 tensors (exact: bfloat16 widens without loss), and when it has
  finished (at once, or when its async work completes) every copy is written back, rounded to bfloat16. A sum of
  many ranks is thus rounded once, where gloo of torch 2 (and NCCL) rounds after each addition. A group the script
  asked gloo for keeps gloo's refusal, as on the instance.
* ``reduce_scatter``, ``reduce_scatter_tensor`` (``_reduce_scatter_base``) and ``all_gather_into_tensor``
  (``_all_gather_base``) under a torch whose gloo lacks them (Debian's 1.13: "does not support reduce_scatter",
  "no support for _allgather_base"; FSDP v1 shards with them), on a group the script asked NCCL for. A
  reduce-scatter all-reduces a copy of its input (the list form's inputs concatenated) and copies this rank's
  chunk into the output: every element is reduced as NCCL reduces it, by the same op (``ReduceOp.AVG``, which
  1.13's gloo lacks too, as a sum divided by the world size, truncated for integers as NCCL does; PREMUL_SUM as
  above), and the input is left as it was. An all-gather into a tensor all-gathers into the output's chunks. An
  async call returns a work handle that completes once the output is written. A group asked for gloo keeps
  gloo's refusal.
* ``all_reduce`` with ``ReduceOp.AVG``, on a group the script asked NCCL for, under a torch whose gloo lacks the op
  (1.13: "Cannot use ReduceOp.AVG with Gloo"), and of integers under any (torch 2's gloo: "result type Float can't
  be cast to the desired output type Long"): a sum, divided by the world size in place once it has finished
  (truncating for integers, as NCCL does). ``reduce`` with AVG, which NCCL refuses too, keeps gloo's refusal.

Anything else that gloo refuses fails with the stand-in's message: the call, that gloo stands in for NCCL here,
and what to do.
"""

from __future__ import annotations

import functools
import inspect

import torch
import torch.distributed
import torch.distributed.distributed_c10d as c10d
from torch._C._distributed_c10d import (AllreduceOptions, HashStore, ProcessGroupGloo, ReduceOp,
                                        _create_work_from_future)

from .distributed import stands_for_nccl

# Collectives whose gloo errors are re-raised with the stand-in's message.
_COLLECTIVES = (
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather", "scatter", "barrier",
    "all_reduce_coalesced", "all_gather_coalesced", "all_gather_object", "broadcast_object_list",
    "gather_object", "scatter_object_list", "send", "recv", "isend", "irecv",
    "_all_gather_base", "_reduce_scatter_base",  # deprecated aliases that FSDP v1 of torch < 2.1 calls
)
# Those that gloo without bfloat16 refuses for it (torch 1.13; the others it refuses for every dtype, or serves).
_NO_BFLOAT16 = ("all_reduce", "reduce", "broadcast", "all_gather", "all_to_all_single", "gather", "scatter",
                "all_reduce_coalesced")


class StandinCollectiveError(RuntimeError):
    """A collective that gloo, standing in for NCCL, cannot run as NCCL would."""


class PremulSum:
    """What ``dist._make_nccl_premul_sum(factor)`` returns under the stand-in: it compares equal to
    ``ReduceOp.PREMUL_SUM`` as the real one does, and keeps its factor (torch's own object hides it in C++)."""

    def __init__(self, factor) -> None:
        self.factor = factor

    def __eq__(self, other) -> bool:
        return other is self or other == c10d.ReduceOp.PREMUL_SUM

    def __hash__(self) -> int:
        return hash(c10d.ReduceOp.PREMUL_SUM)

    def __repr__(self) -> str:
        return f"PremulSum(factor={self.factor!r})"


def install() -> None:
    if _gloo_lacks("_reduce_scatter_base"):  # first: c10d's _reduce_scatter_base calls reduce_scatter_tensor
        _set("reduce_scatter_tensor", _through_all_reduce(c10d.reduce_scatter_tensor, "input"))
    if _gloo_lacks("reduce_scatter"):
        _set("reduce_scatter", _through_all_reduce(c10d.reduce_scatter, "input_list"))
    if _gloo_lacks("_allgather_base"):
        _set("all_gather_into_tensor", _into_chunks(c10d.all_gather_into_tensor))
    _set("all_reduce", _average_as_sum(c10d.all_reduce))
    for name in _NO_BFLOAT16:  # first: the wrappers below, and torch's own callers, reach them through c10d
        if hasattr(c10d, name):
            _set(name, _bfloat16_in_float32(getattr(c10d, name)))
    replacements = {
        "all_gather_into_tensor": _flat_output(c10d.all_gather_into_tensor),
        "_all_gather_base": _flat_output(c10d._all_gather_base) if hasattr(c10d, "_all_gather_base") else None,
        "all_reduce": _premultiplied(c10d.all_reduce, "tensor", in_place=True),
        "reduce": _premultiplied(c10d.reduce, "tensor", in_place=True),
        "reduce_scatter_tensor": _premultiplied(c10d.reduce_scatter_tensor, "input", in_place=False),
        "reduce_scatter": _premultiplied(c10d.reduce_scatter, "input_list", in_place=False),
        "_reduce_scatter_base": (_premultiplied(c10d._reduce_scatter_base, "input", in_place=False)
                                 if hasattr(c10d, "_reduce_scatter_base") else None),
    }
    for name in _COLLECTIVES:
        original = replacements.get(name) or getattr(c10d, name, None)
        if original is not None:
            _set(name, _explained(name, original))
    if hasattr(c10d, "_coalescing_manager"):
        c10d._coalescing_manager = _coalesced_by_torch(c10d._coalescing_manager)
    for module in (c10d, torch.distributed):  # torch.distributed takes it from torch._C, not from c10d
        if hasattr(module, "_make_nccl_premul_sum"):
            module._make_nccl_premul_sum = PremulSum


def _set(name: str, function) -> None:
    # torch's own modules call c10d's globals; frameworks call torch.distributed's names.
    setattr(c10d, name, function)
    if hasattr(torch.distributed, name):
        setattr(torch.distributed, name, function)


def concatenated_view(output: torch.Tensor, input: torch.Tensor) -> torch.Tensor:
    """`output` seen as gloo wants it: the inputs concatenated along dim 0. NCCL only requires world x numel
    elements, contiguous, so a flat or stacked output has the same memory as this view."""
    rest = input.shape[1:]
    if input.dim() == 0 or output.shape[1:] == rest:
        return output
    if not output.is_contiguous() or rest.numel() == 0 or output.numel() % rest.numel():
        return output  # not NCCL's contract either: gloo's own error names the sizes
    return output.view(-1, *rest)


def _flat_output(all_gather_into_tensor):
    @functools.wraps(all_gather_into_tensor)
    def any_output_shape(output_tensor, input_tensor, group=None, async_op=False):
        return all_gather_into_tensor(concatenated_view(output_tensor, input_tensor), input_tensor.detach(), group,
                                      async_op)

    return any_output_shape


def _coalesced_by_torch(coalescing_manager):
    @functools.wraps(coalescing_manager)
    def without_device(group=None, device=None, async_ops=False):
        return coalescing_manager(group, None, async_ops)

    return without_device


def _premultiplied(collective, operand: str, in_place: bool):
    """`collective` taking a ``PremulSum`` op (by keyword or position): its `operand` (a tensor or a list of
    them) multiplied by the factor, in place when the collective writes its result there (all_reduce, reduce),
    else as a copy, and summed."""
    signature = inspect.signature(collective)

    @functools.wraps(collective)
    def with_premul_sum(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        op = call.arguments.get("op")
        if not isinstance(op, PremulSum):
            return collective(*args, **kwargs)
        call.arguments[operand] = _scale(call.arguments[operand], op.factor, in_place)
        call.arguments["op"] = c10d.ReduceOp.SUM
        return collective(*call.args, **call.kwargs)

    return with_premul_sum


def _scale(operand, factor, in_place: bool):
    if isinstance(operand, list):
        return [_scale(tensor, factor, in_place) for tensor in operand]
    return operand.mul_(factor) if in_place else operand * factor


def _bfloat16_in_float32(collective):
    """`collective`, given bfloat16 tensors on an NCCL group where gloo lacks bfloat16: run on float32 copies of
    them, written back when it has finished. Its async work is then the one that also writes them back."""
    signature = inspect.signature(collective)

    @functools.wraps(collective)
    def through_float32(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        if not _bfloat16_beyond_gloo(call.arguments):
            return collective(*args, **kwargs)
        pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        for name, value in call.arguments.items():
            call.arguments[name] = _widened(value, pairs)
        work = collective(*call.args, **call.kwargs)
        if work is None:  # synchronous, or this rank is not in the group
            _write_back(pairs)
            return None
        return _create_work_from_future(work.get_future().then(lambda done: _written_back(done.value(), pairs)))

    return through_float32


def _bfloat16_beyond_gloo(arguments: dict) -> bool:
    tensors = [item for value in arguments.values() for item in (value if isinstance(value, list) else [value])]
    return (any(isinstance(item, torch.Tensor) and item.dtype == torch.bfloat16 for item in tensors)
            and stands_for_nccl(arguments.get("group")) and not _gloo_has_bfloat16())


def _gloo_has_bfloat16() -> bool:
    """Whether this torch's gloo runs bfloat16 collectives (2.13's does, 1.13's not)."""
    return not _gloo_lacks("bfloat16")


def _average() -> AllreduceOptions:
    options = AllreduceOptions()
    options.reduceOp = ReduceOp.AVG
    return options


# How to ask a one-rank gloo group for each feature some gloo lacks (each lacking in 1.13's gloo).
_PROBES = {
    "bfloat16": lambda group: group.allreduce([torch.zeros(1, dtype=torch.bfloat16)]),
    "avg": lambda group: group.allreduce([torch.zeros(1)], _average()),
    "reduce_scatter": lambda group: group.reduce_scatter([torch.zeros(1)], [[torch.zeros(1)]]),
    "_reduce_scatter_base": lambda group: group._reduce_scatter_base(torch.zeros(1), torch.zeros(1)),
    "_allgather_base": lambda group: group._allgather_base(torch.zeros(1), torch.zeros(1)),
}


@functools.cache
def _gloo_lacks(feature: str) -> bool:
    """Whether this torch's gloo refuses `feature` (a key of `_PROBES`): asked of a one-rank group rather than
    guessed from torch's version."""
    options = ProcessGroupGloo._Options()
    options._devices = [ProcessGroupGloo.create_device(hostname="127.0.0.1")]
    try:
        _PROBES[feature](ProcessGroupGloo(HashStore(), 0, 1, options)).wait()
    except RuntimeError:
        return True
    return False


def _through_all_reduce(reduce_scatter, operand: str):
    """`reduce_scatter` (tensor form, or list form with `operand` ``input_list``) on an NCCL group, where gloo
    lacks it: all-reduces a flat copy of every chunk and copies this rank's chunk into the output."""
    signature = inspect.signature(reduce_scatter)

    @functools.wraps(reduce_scatter)
    def through_all_reduce(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        group, output, op = call.arguments["group"], call.arguments["output"], call.arguments["op"]
        chunks = call.arguments[operand] if operand == "input_list" else [call.arguments[operand]]
        world = c10d.get_world_size(group) if stands_for_nccl(group) else 0
        if sum(chunk.numel() for chunk in chunks) != output.numel() * world or c10d._rank_not_in_group(group):
            return reduce_scatter(*args, **kwargs)  # a gloo group, or a call NCCL refuses too: gloo's error says
        flat = torch.cat([chunk.detach().reshape(-1) for chunk in chunks])
        summed = op == ReduceOp.AVG and _gloo_lacks("avg")
        work = c10d.all_reduce(flat, ReduceOp.SUM if summed else op, group, async_op=True)

        def scatter(_done=None):
            mine = flat.view(world, -1)[c10d.get_rank(group)]
            if summed:
                mine = _averaged(mine, world)
            output.copy_(mine.view(output.shape))
            return [output]

        if call.arguments["async_op"]:
            return _create_work_from_future(work.get_future().then(scatter))
        work.wait()
        scatter()
        return None

    return through_all_reduce


def _average_as_sum(all_reduce):
    """`all_reduce` with ``ReduceOp.AVG`` on an NCCL group where gloo lacks the op (1.13), or of integers (which
    gloo of torch 2 refuses to average): a sum, then divided by the world size in place (truncating for integers,
    as NCCL does), at once or when the async work completes."""

    @functools.wraps(all_reduce)
    def average_as_sum(tensor, op=ReduceOp.SUM, group=None, async_op=False):
        if (op != ReduceOp.AVG or (tensor.is_floating_point() and not _gloo_lacks("avg"))
                or not stands_for_nccl(group) or c10d._rank_not_in_group(group)):
            return all_reduce(tensor, op, group, async_op)
        world = c10d.get_world_size(group)

        def divide(_done=None):
            tensor.copy_(_averaged(tensor, world))
            return [tensor]

        work = all_reduce(tensor, ReduceOp.SUM, group, async_op)
        if async_op:
            return _create_work_from_future(work.get_future().then(divide))
        divide()
        return None

    return average_as_sum


def _averaged(summed: torch.Tensor, world: int) -> torch.Tensor:
    """NCCL's average of a sum over `world` ranks: divided, in truncating integer division for integers."""
    return summed / world if summed.is_floating_point() else torch.div(summed, world, rounding_mode="trunc")


def _into_chunks(all_gather_into_tensor):
    """`all_gather_into_tensor` on an NCCL group, where gloo lacks it: an all_gather into the output's chunks,
    one per rank, which are views of it."""

    @functools.wraps(all_gather_into_tensor)
    def into_chunks(output_tensor, input_tensor, group=None, async_op=False):
        if not stands_for_nccl(group) or c10d._rank_not_in_group(group):
            return all_gather_into_tensor(output_tensor, input_tensor, group, async_op)
        world = c10d.get_world_size(group)
        if not output_tensor.is_contiguous() or output_tensor.numel() != input_tensor.numel() * world:
            return all_gather_into_tensor(output_tensor, input_tensor, group, async_op)  # NCCL refuses it too
        chunks = list(output_tensor.view(world, *input_tensor.shape).unbind())
        return c10d.all_gather(chunks, input_tensor.detach(), group, async_op)

    return into_chunks


def _widened(value, pairs: list):
    if isinstance(value, list):
        return [_widened(item, pairs) for item in value]
    if isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16:
        pairs.append((value, value.float()))
        return pairs[-1][1]
    return value


def _write_back(pairs: list) -> None:
    for original, copy in pairs:
        original.copy_(copy)


def _written_back(value, pairs: list):
    """The finished work's value after the copies were written back, each copy in it replaced by its bfloat16
    original: the caller's future reads the tensors it passed (DDP's hook takes ``value()[0]``)."""
    _write_back(pairs)
    return _originals(value, pairs)


def _originals(value, pairs: list):
    if isinstance(value, list):
        return [_originals(item, pairs) for item in value]
    return next((original for original, copy in pairs if value is copy), value)


def refused_by_gloo(error: RuntimeError) -> bool:
    """Whether gloo refused the call itself (not a peer that went away or a timeout, which NCCL would also
    report), and the stand-in has not explained it yet."""
    message = str(error).lower()
    return ("gloo" in message and not isinstance(error, StandinCollectiveError)
            and not any(word in message for word in ("connection", "timed out", "timeout", "closed by peer")))


def _explained(name: str, collective):
    @functools.wraps(collective)
    def explained(*args, **kwargs):
        try:
            return collective(*args, **kwargs)
        except RuntimeError as error:
            if not refused_by_gloo(error):
                raise
            raise StandinCollectiveError(
                f"torch.distributed.{name} failed on smtrain's CPU stand-in for CUDA, where gloo runs the "
                f"collectives of NCCL: {str(error).splitlines()[0]}. To fix: run this step on the GPU instance "
                f"(smtrain submit), or, if NCCL accepts this call, report it to smtrain with the call's "
                f"arguments (shapes, dtypes, op).") from error

    return explained
