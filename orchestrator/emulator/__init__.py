"""`smtrain local`: SageMaker's training container emulated on this machine, without docker.

preparation.py the plan (build_plan for a local target) turned into emulated instances; checks before anything runs
container.py   what the platform hands each instance and the toolkit derives (hyperparameters, resourceconfig, SM_*)
runners.py     the toolkit's launchers, argument for argument (python, mpirun, SMDataParallel, torchrun)
launch.py      those launchers adapted to one machine, rule by rule; each host's environment
mpi_hooks.py   Open MPI's remote shell, per-rank start and output relabelling for emulated hosts
usercode.py    requirements.txt / setup.py installed as the toolkit does, into a cached overlay
hostname.py    gethostname() answers algo-N (an LD_PRELOAD shim, gethostname.c, built once)
cache.py       smtrain's cache on this machine (the shim, requirement overlays, downloaded S3 channels)
layout.py      the run directory: one /opt/ml tree per host, checkpoint sync, status files, merged artifacts
failures.py    the failure reason: the failing rank's exception first, then the toolkit's message
deviations.py  what differs from SageMaker, said once per run
supervisor.py  starts, streams, stops and signals the processes of one attempt
stall.py, stacks.py   the hang watchdog and every rank's stack
gpu_standin/   the CPU stand-in for CUDA, loaded into the training processes
standin.py     whether a run's processes get it (the instance's GPUs against this machine's), and its variables
smoke.py       `--smoke`: which ranks were seen started, and the verdict
status.py      the run's DescribeTrainingJob (status.json) as it goes, and stop requests from other processes
runner.py      the whole run: attempts (spot restarts), result
"""
