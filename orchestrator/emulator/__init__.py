"""`smtrain local`: SageMaker's training container emulated on this machine, without docker.

A run goes top to bottom; each part imports only from the ones below it (import-linter keeps it so):

local_plan.py   the plan: the same build_plan call submit's plan makes, for a local target (file:// stand-ins)
local_run.py    the whole run: plan, prepare, attempts (spot restarts), result; `run_local`
tuning/         `smtrain tune local`: search (trials as local runs), choosers (the tuning strategies)
reporting/      how a run ended: failures (the toolkit's message, after observing/root_cause's headline),
                smoke (`--smoke`: which ranks were seen started, and the verdict)
preparing/      the plan turned into emulated instances, checked before anything runs: prepared_run, layout
                (the run directory: one /opt/ml tree per host, checkpoint sync, status files, merged
                artifacts), channels (each host's data: all of it, its ShardedByS3Key share, or Pipe FIFOs),
                usercode (requirements.txt / setup.py into a cached overlay), image_match (imports against the
                image's packages), deviations (what differs from SageMaker, said once per run)
supervising/    one attempt's processes: supervisor (start, stream, stop, signal), stall + stacks (the hang
                watchdog and every rank's stack), status (status.json, the run's DescribeTrainingJob, and stop
                requests from other processes)
launching/      the toolkit's launchers, argument for argument (toolkit_launchers: python, mpirun,
                SMDataParallel, torchrun), adapted to one machine rule by rule (launch); Open MPI's remote
                shell and per-rank start (mpi_hooks); each host's /opt/ml (opt_ml; hostfs: a mount namespace
                per host)
instances/      what the platform hands each instance (container: hyperparameters, resourceconfig, SM_*), its
                name (hostname: the gethostname.c shim), its GPUs (standin: whether it gets the CPU stand-in),
                and smtrain's cache on this machine (cache)
run_options.py  what a run may be told (run directory, inputs, processes per host, smoke, stall timeout, ...),
                declared once: the CLI's flags, the API's keywords and `tune local`'s trial options come from it
gpu_standin/    the CPU stand-in for CUDA, loaded into the training processes (torch + stdlib only)
overlay_site/   the sitecustomize that puts installed requirements after the standard library in each process
shadowed_site.py  which sitecustomize those two hooks shadow and run (stdlib only, loaded by its path)
"""
