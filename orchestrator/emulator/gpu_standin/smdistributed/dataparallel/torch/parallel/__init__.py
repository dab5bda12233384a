"""``from smdistributed.dataparallel.torch.parallel import DistributedDataParallel``."""

from smdistributed.dataparallel.torch.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
