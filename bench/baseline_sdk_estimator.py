"""Baseline for bench_cli.py: what a bare SageMaker SDK v2 script does before it can submit: import the SDK and
construct the PyTorch estimator for the 2-host example (no validation, no request capture)."""

import sagemaker
from sagemaker.pytorch import PyTorch

session = sagemaker.Session(default_bucket="my-bucket")
PyTorch(entry_point="train.py", source_dir="entrypoints", framework_version="2.3.0", py_version="py311",
        role="arn:aws:iam::123456789012:role/SageMakerExecution", instance_type="ml.c5.2xlarge", instance_count=2,
        hyperparameters={"trainer": "gloo", "epochs": 3}, output_path="s3://my-bucket/outputs/",
        sagemaker_session=session)
