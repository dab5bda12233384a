"""A rank whose DataLoader worker blocks in __getitem__ (a read from a mount that never answers); says `waiting`
once its first batch is in, then waits for the second forever."""

import time

import torch
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        if index >= 2:
            time.sleep(3600)
        return torch.ones(2) * index


def main() -> None:
    for step, batch in enumerate(DataLoader(Shards(), batch_size=2, num_workers=1)):
        print(f"waiting after step {step}", flush=True)


if __name__ == "__main__":
    main()
