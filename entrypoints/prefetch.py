"""Loading batches ahead on a background thread (``--prefetch N``); on GPUs, copying them on a side stream.

The thread draws the DataLoader's batches in order and keeps up to N of them ready, so the loader's Python work
(indexing, collating, pinning) overlaps the training step. For a CUDA device it also issues each batch's copy to
the device (``non_blocking``, from pinned memory) on a side stream of that device and records an event; the
training thread makes its own stream wait for that event, so the copy overlaps the running step instead of
queueing behind it. On the CPU only the thread remains. The batches, their order and their values are the
loader's: prefetching changes when a batch is made, never which.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator, Sequence

import torch

_PUT_POLL_SECONDS = 0.1  # how soon a producer blocked on a full queue notices that the consumer has gone


class _End:
    """The loader is exhausted."""


class _Failed:
    """The loader raised; the consumer re-raises it."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetcher:
    """Iterates over `batches` on a background thread, up to `depth` batches ahead of the consumer.

    Call `close` (``contextlib.closing``) when done, so that the thread stops when the consumer stops early.
    """

    def __init__(self, batches: Iterable[Sequence[torch.Tensor]], devices: Sequence[torch.device],
                 depth: int) -> None:
        """
        Args:
            batches: the loader; each batch is a sequence of tensors.
            devices: where each tensor of a batch goes, in order (features, targets).
            depth: batches kept ready, at least 1.
        """
        self._devices = tuple(devices)
        self._streams = {device: torch.cuda.Stream(device) for device in set(devices) if device.type == "cuda"}
        self._ready: queue.Queue = queue.Queue(maxsize=depth)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(iter(batches),), name="prefetch", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        while True:
            item = self._ready.get()
            if isinstance(item, _End):
                return
            if isinstance(item, _Failed):
                raise item.error
            yield tuple(_when_copied(tensor, device, event)
                        for (tensor, event), device in zip(item, self._devices, strict=True))

    def close(self) -> None:
        """Stops the thread: it finishes the batch it is loading, if any, and loads no more."""
        self._stopped.set()
        while self._thread.is_alive():
            try:
                self._ready.get_nowait()  # frees a producer blocked on the full queue
            except queue.Empty:
                self._thread.join(_PUT_POLL_SECONDS)

    def _produce(self, batches: Iterator[Sequence[torch.Tensor]]) -> None:
        try:
            while not self._stopped.is_set():
                batch = next(batches, None)
                if batch is None:
                    self._put(_End())
                    return
                copies = [self._copy(tensor, device) for tensor, device in zip(batch, self._devices, strict=True)]
                if not self._put(copies):
                    return
        except Exception as error:  # anything the loader raises belongs to the consumer
            self._put(_Failed(error))

    def _put(self, item: object) -> bool:
        """Queues `item` once there is room; False when the consumer stopped first."""
        while not self._stopped.is_set():
            try:
                self._ready.put(item, timeout=_PUT_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _copy(self, tensor: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, torch.cuda.Event | None]:
        stream = self._streams.get(device)
        if stream is None:
            return tensor.to(device), None
        with torch.cuda.stream(stream):
            copy = tensor.to(device, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(stream)
        return copy, copied


def _when_copied(tensor: torch.Tensor, device: torch.device, copied: torch.cuda.Event | None) -> torch.Tensor:
    """`tensor`, usable on `device`'s current stream: that stream waits for the side stream's copy, and the
    caching allocator keeps the copy's memory until the current stream is done with it."""
    if copied is None:
        return tensor
    stream = torch.cuda.current_stream(device)
    stream.wait_event(copied)
    tensor.record_stream(stream)
    return tensor
