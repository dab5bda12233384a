"""Builds a tiny C++ extension with torch.utils.cpp_extension.load_inline, as DeepSpeed builds its ops on first
use: the compile prints nothing for as long as it takes. Then uses it and prints a progress line."""

import os

from torch.utils.cpp_extension import load_inline

print(f"building into {os.environ.get('TORCH_EXTENSIONS_DIR', 'torch default')}", flush=True)
module = load_inline(name="smtrain_tiny_op", cpp_sources="int add_one(int x) { return x + 1; }",
                     functions=["add_one"])
print(f"add_one(41)={module.add_one(41)}", flush=True)
print("epoch=1 step=1/1 train_loss=0.500000", flush=True)
