"""CUDA streams and events, for work that runs synchronously on the CPU.

Every operation has finished when its call returns, so every stream is always idle and waiting on one is free;
the bookkeeping is kept (current stream per thread and device, ``with torch.cuda.stream(s)``) so that code
comparing or passing streams behaves as on the instance. An event records the wall-clock time, so
``start.elapsed_time(end)`` measures the CPU work between the two records, in milliseconds.
"""

from __future__ import annotations

import functools
import threading
import time

import torch

from . import devices


class Stream:
    """``torch.cuda.Stream(device=None, priority=0)``: a queue of GPU work, here always empty."""

    def __init__(self, device=None, priority: int = 0, **kwargs) -> None:
        self.device = torch.device("cuda", devices.index_of(device))
        self.priority = priority

    @property
    def device_index(self) -> int:
        return self.device.index

    def wait_stream(self, stream: Stream) -> None:
        """Nothing to wait for: the other stream's work is done."""

    def wait_event(self, event: Event) -> None:
        """Nothing to wait for: the event's work is done."""

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def is_capturing(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device={self.device} (smtrain CPU stand-in)>"


class Event:
    """``torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False)``."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._recorded_at: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._recorded_at = time.perf_counter()

    def wait(self, stream: Stream | None = None) -> None:
        """Nothing to wait for."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event's record to `end_event`'s, with CUDA's errors for unusable events."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded_at is None or end_event._recorded_at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._recorded_at - self._recorded_at) * 1000.0


class _Current(threading.local):
    def __init__(self) -> None:
        self.by_device: dict[int, Stream] = {}


_current = _Current()
_default_streams: dict[int, Stream] = {}


def default_stream(device=None) -> Stream:
    index = devices.index_of(device)
    if index not in _default_streams:
        _default_streams[index] = Stream(index)
    return _default_streams[index]


def current_stream(device=None) -> Stream:
    index = devices.index_of(device)
    return _current.by_device.get(index) or default_stream(index)


def set_stream(stream: Stream) -> None:
    if stream is not None:
        _current.by_device[stream.device_index] = stream


class StreamContext:
    """``with torch.cuda.stream(s):``: `s` is the current stream of its device in this thread inside the block,
    and its device is the selected one."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self._previous = (devices.current(), current_stream(self.stream.device_index))
            devices.select(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc_info) -> bool:
        if self.stream is not None:
            device, stream = self._previous
            set_stream(stream)
            devices.select(device)
        return False


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)


def install() -> None:
    for name, value in {"Stream": Stream, "Event": Event, "current_stream": current_stream,
                        "default_stream": default_stream, "set_stream": set_stream, "stream": stream,
                        "StreamContext": StreamContext}.items():
        setattr(torch.cuda, name, value)
    torch.Tensor.record_stream = _record_stream(torch.Tensor.record_stream)


def _record_stream(record_stream):
    @functools.wraps(record_stream)
    def record_emulated_stream(self, stream) -> None:
        """The tensor's memory is ordinary CPU memory, freed when the tensor is; nothing to record."""
        if not isinstance(stream, Stream):
            record_stream(self, stream)

    return record_emulated_stream
