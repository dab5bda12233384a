"""A GPU training loop with a prefetching loader and mixed precision, in the shapes GPU scripts use for speed.

    python prefetch_amp.py

A background thread takes batches from a pinned-memory DataLoader and copies them to the GPU on a side stream
(its own torch.cuda.set_device, ``with torch.cuda.stream(s)``, ``non_blocking=True``); the training thread waits
for that stream and records the tensors on its own. Training runs under ``torch.autocast("cuda", float16)`` with
``torch.amp.GradScaler("cuda")``, timed with CUDA events. Prints one JSON line at the end.
"""

import json
import math
import queue
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

DEVICE_INDEX = 0


class CudaPrefetcher:
    """Copies the next batches to the GPU on a side stream while the current one trains."""

    def __init__(self, loader, device_index, depth=2):
        self.device = torch.device("cuda", device_index)
        self.stream = torch.cuda.Stream(device=self.device)
        self.batches = queue.Queue(maxsize=depth)
        self.thread = threading.Thread(target=self._copy_batches, args=(loader,), daemon=True)
        self.thread.start()

    def _copy_batches(self, loader):
        torch.cuda.set_device(self.device)  # the current device is per thread
        for inputs, targets in loader:
            with torch.cuda.stream(self.stream):
                inputs = inputs.to(self.device, non_blocking=True)
                targets = targets.cuda(non_blocking=True)
                weights = torch.ones(inputs.shape[0], device="cuda")
            self.batches.put((inputs, targets, weights))
        self.batches.put(None)

    def __iter__(self):
        while (batch := self.batches.get()) is not None:
            torch.cuda.current_stream().wait_stream(self.stream)
            for tensor in batch:
                tensor.record_stream(torch.cuda.current_stream())
            yield batch


def main():
    torch.cuda.set_device(DEVICE_INDEX)
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    inputs = torch.randn(256, 16)
    dataset = TensorDataset(inputs, (inputs[:, :4] * 2.0).sum(dim=1, keepdim=True))
    loader = DataLoader(dataset, batch_size=32, shuffle=True, pin_memory=True, num_workers=0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.reset_peak_memory_stats()

    start.record()
    for epoch in range(3):
        for step, (x, y, weights) in enumerate(CudaPrefetcher(loader, DEVICE_INDEX)):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                output = model(x)
                loss = ((output.float() - y) ** 2 * weights[:, None]).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    end.record()
    torch.cuda.synchronize()

    print(json.dumps({"final_loss": loss.item(), "finite": math.isfinite(loss.item()), "steps": step + 1,
                      "epochs": epoch + 1, "autocast_dtype": str(output.dtype), "scale": scaler.get_scale(),
                      "elapsed_ms": start.elapsed_time(end),
                      "max_memory_allocated": torch.cuda.max_memory_allocated()}), flush=True)


if __name__ == "__main__":
    main()
