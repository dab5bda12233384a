"""Accepts only --epochs: a job that passes another hyperparameter is rejected by argparse (exit 2)."""

import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
print("never here", args)
