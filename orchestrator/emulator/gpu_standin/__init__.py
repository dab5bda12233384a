"""smtrain's CPU stand-in for CUDA: this directory goes first on PYTHONPATH of every emulated training process.

`smtrain local` puts it there when the spec's instance has GPUs and this machine has none, so that an unmodified
GPU script runs on the CPU and takes the branches it takes on the instance. It holds:

* ``sitecustomize.py``: Python's start-up hook; patches torch when it is first imported (``smtrain_gpu_standin``);
* ``smtrain_gpu_standin/``: the patches; ``env.py`` (the variables that switch it on) and ``notice.py`` (the
  start-of-run notice) are torch-free, so the emulator can import them;
* ``smdistributed/``: a stand-in for SageMaker's SMDDP library (only in SageMaker's GPU images).

Nothing here imports ``orchestrator``; the code needs only torch and the standard library.
"""
