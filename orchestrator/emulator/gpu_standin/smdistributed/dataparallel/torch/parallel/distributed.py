"""SMDDP's ``DistributedDataParallel``: torch's, over the ``smddp`` group that ``init_process_group()`` started.

Its signature is SMDDP's (``broadcast_buffers`` fourth; None means torch's default, True, without torch's
deprecation warning); ``device_ids`` are dropped by the stand-in's DDP patch, as for torch's DDP on the CPU.
"""

from __future__ import annotations

import torch


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    def __init__(self, module: torch.nn.Module, device_ids=None, output_device=None,
                 broadcast_buffers: bool | None = None, process_group=None, bucket_cap_mb=None) -> None:
        given = {name: value for name, value in (("broadcast_buffers", broadcast_buffers),
                                                 ("bucket_cap_mb", bucket_cap_mb)) if value is not None}
        # omitted, not None: torch before 2.4 takes None for neither
        super().__init__(module, device_ids, output_device, process_group=process_group, **given)
