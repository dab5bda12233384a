"""Runs nanoGPT's train.py with SageMaker's hyperparameters, which arrive as `--key value` (two arguments), in the
`--key=value` form (one argument) that its configurator.py reads."""
import runpy
import sys

words = sys.argv[1:]
sys.argv[1:] = [f"{key}={value}" for key, value in zip(words[::2], words[1::2])]
runpy.run_path("train.py", run_name="__main__")
