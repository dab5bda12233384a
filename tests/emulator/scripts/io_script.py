"""Rank 0 moves data without a word and with almost no CPU, then prints a step; rank 1 waits for it in a gloo
barrier meanwhile, as Hugging Face's `main_process_first` makes the other ranks wait for rank 0's download.

--work download: reads --source (a throttled HTTP server's URL) into a file, as a hub or S3 download does;
--work download-to-memory: reads it into memory (plain HTTP: recv() on the socket, no file written);
--work read: reads --source (a FIFO fed slowly), as a Pipe mode channel or a slow disk's dataset is read;
--work write: writes --megabytes to --target (a FIFO drained slowly), as torch.save writes to a slow disk.

Rank 0 says `moving` just before it starts, so that the silence that follows is the I/O's alone."""

import argparse
import json
import os
import shutil
import tempfile
import urllib.request

import torch.distributed as dist

CHUNK = 64 * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", choices=("download", "download-to-memory", "read", "write"), required=True)
    parser.add_argument("--source", default="")
    parser.add_argument("--target", default="")
    parser.add_argument("--megabytes", type=int, default=0)
    args = parser.parse_args()
    hosts = json.loads(os.environ["SM_HOSTS"])
    rank = hosts.index(os.environ["SM_CURRENT_HOST"])
    dist.init_process_group("gloo", rank=rank, world_size=len(hosts))
    if rank == 0:
        print("moving", flush=True)
        if args.work == "download":
            with urllib.request.urlopen(args.source) as response, tempfile.TemporaryFile() as file:
                shutil.copyfileobj(response, file, CHUNK)
        elif args.work == "download-to-memory":
            with urllib.request.urlopen(args.source) as response:
                while response.read(CHUNK):
                    pass
        elif args.work == "read":
            with open(args.source, "rb") as source:
                while source.read(CHUNK):
                    pass
        else:
            with open(args.target, "wb") as target:
                for _ in range(args.megabytes * 1024 * 1024 // CHUNK):
                    target.write(bytes(CHUNK))
    dist.barrier()
    print("epoch=1 step=1/1 train_loss=1.000000", flush=True)


if __name__ == "__main__":
    main()
