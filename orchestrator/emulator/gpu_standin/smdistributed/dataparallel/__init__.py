"""Stand-in for SMDDP (``smdistributed.dataparallel``): its PyTorch APIs, over torch.distributed and gloo."""
