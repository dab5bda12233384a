"""The CPU stand-in for CUDA. Importing this package does nothing; ``hook.install`` arms it, and the patches are
applied by ``patches.apply`` right after torch is first imported.

Only ``env`` and ``notice`` may be imported without torch (the emulator reads them); the other modules import
torch at their top.
"""
