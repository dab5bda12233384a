"""Baseline for bench_submit.py: the bare SDK v2 script a user writes to submit the 2-host CPU example
(job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml): import, `PyTorch(...)`, `fit(wait=False)`. The SDK tars
`source_dir` and uploads it under the job's name at every fit."""

import sagemaker
from sagemaker.pytorch import PyTorch

PyTorch(
    entry_point="train.py",
    source_dir="entrypoints",
    framework_version="2.3.0",
    py_version="py311",
    role="arn:aws:iam::123456789012:role/SageMakerExecution",
    instance_type="ml.c5.2xlarge",
    instance_count=2,
    volume_size=30,
    hyperparameters={"trainer": "gloo", "model": "mlp", "mlp-hidden": 256, "mlp-layers": 3, "epochs": 3,
                     "batch-size": 64, "lr": 0.05, "num-samples": 8192, "log-every": 16},
    output_path="s3://my-bucket/outputs/",
    checkpoint_s3_uri="s3://my-bucket/checkpoints/mlp-gloo-cpu/",
    max_run=3600,
    base_job_name="mlp-gloo-cpu",
    tags=[{"Key": "team", "Value": "ml"}, {"Key": "example", "Value": "cpu-gloo"}],
    metric_definitions=[{"Name": "train:loss", "Regex": r"train_loss=([-+0-9.eE]+)"},
                        {"Name": "train:samples_per_sec", "Regex": r"samples_per_sec=([0-9.eE+]+)"},
                        {"Name": "train:epoch", "Regex": r"epoch=([0-9]+) step="}],
    sagemaker_session=sagemaker.Session(),
).fit(wait=False)
