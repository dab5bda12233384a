"""`smtrain local`: SageMaker's training container emulated on this machine, without docker.

container.py  what the SDK sends and the toolkit derives (hyperparameters, resourceconfig, SM_* variables)
layout.py     the run directory: one /opt/ml tree per host, checkpoint sync, merged artifacts
launch.py     each mode's launcher command line, and the few local deviations
supervisor.py starts, streams, stops and signals the processes of one attempt
runner.py     the whole run: preflight, attempts (spot restarts), result
"""
