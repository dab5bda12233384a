"""Every malformed or impossible spec fails `smtrain validate` with exit 2, the file:line:col or --set that
caused it, the field path, and a fix."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.model import TAG_PATTERN, api_limit

BASE_SPEC = """\
name: demo
entry_point: train.py
source_dir: .
framework_version: "2.3.0"
role: arn:aws:iam::123456789012:role/Demo
instance: {type: ml.c5.2xlarge, count: 2}
distribution: {mode: none}
hyperparameters: {trainer: gloo, epochs: 1}
output_path: s3://demo-bucket/outputs/
"""


def _replace(old: str, new: str) -> str:
    assert old in BASE_SPEC, old
    return BASE_SPEC.replace(old, new)


GPU = "instance: {type: ml.g5.12xlarge, count: 2}"
P4D = "instance: {type: ml.p4d.24xlarge, count: 2}"

# (id, spec text, --set overrides, expected location, expected field, expected fragment of message or fix)
CASES = [
    ("unknown-top-key", _replace("instance:", "instanse:"), [], "spec.yaml:6:1", "instanse", "did you mean `instance`?"),
    ("unknown-nested-key", _replace("count: 2}", "cout: 2}"), [], "spec.yaml:6", "instance.cout",
     "did you mean `count`?"),
    ("cyrillic-letter-in-key", _replace("entry_point:", "entry_\u0440oint:"), [], "spec.yaml:2:1",
     "entry_\u0440oint", "did you mean `entry_point`? The key you wrote is not plain ASCII, it holds \u0440 U+0440 "
                         "CYRILLIC SMALL LETTER ER"),
    ("greek-letter-in-set-key", BASE_SPEC, ["instance.\u03c4ype=ml.c5.xlarge"],
     "--set instance.\u03c4ype=ml.c5.xlarge", "instance.\u03c4ype",
     "did you mean `type`? The key you wrote is not plain ASCII, it holds \u03c4 U+03C4 GREEK SMALL LETTER TAU"),
    ("fullwidth-key", BASE_SPEC, ["\uff4e\uff41\uff4d\uff45=demo"], "--set \uff4e\uff41\uff4d\uff45=demo",
     "\uff4e\uff41\uff4d\uff45", "did you mean `name`? The key you wrote is not plain ASCII, it holds \uff4e U+FF4E"),
    ("missing-name", _replace("name: demo\n", ""), [], "spec.yaml:1:1", "name", "add `name:`"),
    ("bad-job-name", _replace("name: demo", "name: my_job"), [], "spec.yaml:1:1", "name", "not a valid job name"),
    ("job-name-too-long", _replace("name: demo", "name: accelerate-published-distributed-data-loop"), [],
     "spec.yaml:1:1", "name", ("at most 39 characters, as SDK v2 allows: each job is named `name-<24-character time "
                               "stamp>` within SageMaker's 63 (smtrain adds a 5-character random tag too, and shortens "
                               "the name to fit); e.g. name: accelerate-published-distributed-data\n")),
    ("unquoted-version", _replace('"2.3.0"', "2.3"), [], "spec.yaml:4:1", "framework_version",
     'write it in quotes: framework_version: "2.3"'),
    ("not-a-version", _replace('"2.3.0"', "latest"), [], "spec.yaml:4:1", "framework_version",
     "is not a PyTorch version"),
    ("no-version-or-image", _replace('framework_version: "2.3.0"\n', ""), [], "spec.yaml:1:1", "",
     "give framework_version"),
    ("version-and-image", BASE_SPEC, ["image_uri=123.dkr.ecr.us-east-1.amazonaws.com/x:1"], "spec.yaml:1:1", "",
     "either image_uri or framework_version"),
    ("instance-type-shape", BASE_SPEC, ["instance.type=c5.2xlarge"], "--set instance.type=c5.2xlarge",
     "instance.type", "did you mean `ml.c5.2xlarge`?"),
    ("zero-instances", BASE_SPEC, ["instance.count=0"], "--set instance.count=0", "instance.count",
     "use a value at least 1"),
    ("quoted-count", _replace("count: 2", 'count: "2"'), [], "spec.yaml:6", "instance.count",
     "write a whole number without quotes"),
    ("unknown-mode", _replace("mode: none", "mode: torchrun"), [], "spec.yaml:7:16", "distribution.mode",
     "did you mean `torch_distributed`?"),
    ("mode-none-processes", BASE_SPEC, ["distribution.processes_per_host=2"], "--set distribution.processes_per_host=2",
     "distribution.processes_per_host", "mode none runs exactly one process per host"),
    ("torch-distributed-cpu", _replace("mode: none", "mode: torch_distributed"), [], "spec.yaml:7:16",
     "distribution.mode", "only for GPU and Trainium instances"),
    ("torch-distributed-version", _replace("instance: {type: ml.c5.2xlarge, count: 2}", GPU).replace(
        "mode: none", "mode: torch_distributed").replace("trainer: gloo", "trainer: ddp"),
     ["framework_version=2.4.1"], "--set framework_version=2.4.1", "framework_version",
     "no SageMaker PyTorch training image for framework_version '2.4.1'"),
    ("smddp-version", _replace("instance: {type: ml.c5.2xlarge, count: 2}", P4D).replace(
        "mode: none", "mode: smddp").replace("trainer: gloo", "trainer: ddp"), ["framework_version=2.10.0"],
     "spec.yaml:7:16", "distribution.mode", "SMDDP is in no SageMaker PyTorch image after 2.5"),
    ("smddp-p5", _replace("instance: {type: ml.c5.2xlarge, count: 2}", "instance: {type: ml.p5.48xlarge, count: 2}")
     .replace("mode: none", "mode: smddp").replace("trainer: gloo", "trainer: ddp")
     .replace('"2.3.0"', '"2.2.0"'), [], "spec.yaml:6", "instance.type", "does not support p5"),
    ("smddp-on-cpu", _replace("mode: none", "mode: smddp").replace('"2.3.0"', '"2.2.0"'), [], "spec.yaml:6",
     "instance.type", "needs NVIDIA GPUs"),
    ("mpi-on-trainium", _replace("instance: {type: ml.c5.2xlarge, count: 2}",
                                 "instance: {type: ml.trn1.32xlarge, count: 2}").replace("mode: none", "mode: mpi"),
     [], "spec.yaml:7:16", "distribution.mode", "Trainium supports only torch_distributed"),
    ("dp-on-two-hosts", _replace("trainer: gloo", "trainer: dp"), [], "spec.yaml:8:19", "hyperparameters.trainer",
     "unsynchronised copy"),
    ("nccl-on-cpu", _replace("trainer: gloo", "trainer: ddp"), [], "spec.yaml:8:19", "hyperparameters.trainer",
     "NCCL, which needs GPUs"),
    ("spot-without-max-wait", BASE_SPEC + "spot: {enabled: true}\ncheckpoint: {s3_uri: s3://bkt/ckpt/}\n", [],
     "spec.yaml:10", "spot.max_wait_seconds", "spot needs spot.max_wait_seconds >= max_run_seconds"),
    ("spot-without-checkpoint", BASE_SPEC + "spot: {enabled: true, max_wait_seconds: 90000}\n", [], "spec.yaml:10",
     "spot.enabled", "restart training from step 0"),
    ("custom-mpi-options-mode-none", BASE_SPEC, ["distribution.custom_mpi_options=-verbose"],
     "--set distribution.custom_mpi_options=-verbose", "distribution.custom_mpi_options", "ignored in mode none"),
    ("processes-torch-distributed", _replace("instance: {type: ml.c5.2xlarge, count: 2}", GPU).replace(
        "mode: none", "mode: torch_distributed, processes_per_host: 2").replace("trainer: gloo", "trainer: ddp"), [],
     "spec.yaml:7", "distribution.processes_per_host", "the SDK does not send it"),
    ("processes-exceed-gpus", _replace("instance: {type: ml.c5.2xlarge, count: 2}", GPU).replace(
        "mode: none", "mode: mpi, processes_per_host: 8").replace("trainer: gloo", "trainer: ddp"), [],
     "spec.yaml:7", "distribution.processes_per_host", "has 4 GPU(s)"),
    ("py-version-mismatch", BASE_SPEC, ["py_version=py38"], "--set py_version=py38", "py_version",
     "no SageMaker PyTorch training image"),
    ("subnets-without-groups", BASE_SPEC + "network: {subnets: [subnet-1]}\n", [], "spec.yaml:10",
     "network.security_group_ids", "must be given together"),
    ("env-name", BASE_SPEC + "environment: {MY-VAR: x}\n", [], "spec.yaml:10:15", "environment.MY-VAR",
     "e.g. MY_VAR"),
    ("reserved-hyperparameter", _replace("epochs: 1", "epochs: 1, sagemaker_program: x.py"), [], "spec.yaml:8:45",
     "hyperparameters.sagemaker_program", "reserved for the SDK"),
    ("metric-without-group", BASE_SPEC + "metrics: [{name: loss, regex: 'loss=[0-9.]+'}]\n", [], "spec.yaml:10",
     "metrics.0.regex", "needs a capture group"),
    ("missing-entry-point", _replace("entry_point: train.py", "entry_point: trian.py"), [], "spec.yaml:2:1",
     "entry_point", "trian.py is not in"),
    ("missing-source-dir", _replace("source_dir: .", "source_dir: ../nowhere"), [], "spec.yaml:3:1", "source_dir",
     "is not a directory"),
    ("max-run-limit", BASE_SPEC, ["max_run_seconds=3000000"], "--set max_run_seconds=3000000", "max_run_seconds",
     "use a value at most 2419200"),
    ("keep-alive-limit", BASE_SPEC, ["keep_alive_seconds=30000"], "--set keep_alive_seconds=30000",
     "keep_alive_seconds", "use a value at most 21600"),
    ("duplicate-key", BASE_SPEC + "name: again\n", [], "spec.yaml:10:1", "name", "duplicate key"),
    ("broken-yaml", BASE_SPEC + "inputs: {train: [\n", [], "spec.yaml:11:1", "", "YAML:"),
    ("missing-local-input", BASE_SPEC + "inputs: {train: ./data}\n", [], "spec.yaml:10:10", "inputs.train",
     "does not exist"),
    ("channel-name", BASE_SPEC + "inputs: {'my data': s3://bkt/d/}\n", [], "spec.yaml:10:10", "inputs.my data",
     "e.g. my_data"),
    ("checkpoint-uri", BASE_SPEC + "checkpoint: {s3_uri: /tmp/ckpt}\n", [], "spec.yaml:10:14", "checkpoint.s3_uri",
     "is not an S3 URI"),
    ("boolean", BASE_SPEC + "spot: {enabled: maybe}\n", [], "spec.yaml:10:8", "spot.enabled", "use true or false"),
    ("list-item-key", BASE_SPEC + "metrics: [{name: loss, regex: 'loss=([0-9.]+)', regx: x}]\n", [], "spec.yaml:10",
     "metrics.0.regx", "did you mean `regex`?"),
    ("channel-key", BASE_SPEC + "inputs: {train: {uri: 's3://bkt/t/', input_mod: Pipe}}\n", [], "spec.yaml:10",
     "inputs.train.input_mod", "did you mean `input_mode`?"),
    ("instance-group-key", _replace("{type: ml.c5.2xlarge, count: 2}", "{groups: [{name: a, type: ml.c5.2xlarge, "
                                    "cont: 2}]}"), [], "spec.yaml:6", "instance.groups.0.cont", "did you mean `count`?"),
    ("isolation-code-channel", BASE_SPEC + "inputs: {code: s3://bkt/c/}\nnetwork: {enable_network_isolation: true}\n",
     [], "spec.yaml:10:10", "inputs.code", "source code travels as an input channel named `code`"),
]


def _flow_map(count: int, key: str = "k{}", value: str = "v") -> str:
    return "{" + ", ".join(f"{key.format(index)}: {value}" for index in range(count)) + "}"


def _over(member: str, trait: str = "max") -> int:
    """One past an API limit, read from the generated limits file (the model's own source)."""
    return api_limit(member, trait) + 1


ROLE = "role: arn:aws:iam::123456789012:role/Demo"
ACCESS_KEY_SPEC = BASE_SPEC + "environment: {AWS_SECRET_ACCESS_KEY: %s}\n"

# Limits of CreateTrainingJob (botocore's service model) and shapes SageMaker accepts, each refused with exit 2.
# (id, spec text, --set overrides, location, field, fragment of the message, fragment of the fix line)
API_CASES = [
    ("instance-type-typo", BASE_SPEC, ["instance.type=ml.g5.12xlage"], "--set instance.type=ml.g5.12xlage",
     "instance.type", "is not a SageMaker training instance type", "did you mean `ml.g5.12xlarge`?"),
    ("instance-type-unheard-of", _replace("ml.c5.2xlarge", "ml.qq9.huge"), [], "spec.yaml:6:12", "instance.type",
     "'ml.qq9.huge' is not a SageMaker training instance type", "`smtrain instances` lists"),
    ("output-path-https", BASE_SPEC, ["output_path=https://demo-bucket.s3.amazonaws.com/out/"],
     "--set output_path=https://demo-bucket.s3.amazonaws.com/out/", "output_path", "is not an s3:// URI",
     "write it as s3://<bucket>/outputs/"),
    ("output-path-local", _replace("s3://demo-bucket/outputs/", "/tmp/outputs"), [], "spec.yaml:9:1", "output_path",
     "'/tmp/outputs' is not an s3:// URI", "s3://<bucket>/outputs/"),
    ("output-path-no-bucket", _replace("s3://demo-bucket/outputs/", "s3://"), [], "spec.yaml:9:1", "output_path",
     "'s3://' is not an s3:// URI", "s3://<bucket>/outputs/"),
    # S3's naming rules, checked with the spec: before, these failed as NoSuchBucket after the source was packed.
    ("output-path-uppercase-bucket", _replace("demo-bucket", "Demo_Bucket"), [], "spec.yaml:9:1", "output_path",
     "'Demo_Bucket' is not an S3 bucket name", "3 to 63 lowercase letters, digits, dots and hyphens, beginning and "
     "ending with a letter or digit, e.g. s3://demo-bucket/"),
    # Its example was the name itself, `e.g. s3://ab/`, the same mistake: now a name S3 takes.
    ("output-path-short-bucket", BASE_SPEC, ["output_path=s3://ab/out/"], "--set output_path=s3://ab/out/",
     "output_path", "'ab' is not an S3 bucket name", "with a letter or digit, e.g. s3://my-bucket/"),
    ("code-location-ip-bucket", BASE_SPEC, ["code_location=s3://10.0.0.1/code/"],
     "--set code_location=s3://10.0.0.1/code/", "code_location", "'10.0.0.1' is not an S3 bucket name",
     "3 to 63 lowercase"),
    ("code-location-double-dot", BASE_SPEC, ["code_location=s3://my..bucket/code/"],
     "--set code_location=s3://my..bucket/code/", "code_location", "'my..bucket' is not an S3 bucket name",
     "3 to 63 lowercase"),
    ("code-location", BASE_SPEC + "code_location: demo-bucket/code\n", [], "spec.yaml:10:1", "code_location",
     "is not an s3:// URI", "s3://<bucket>/code/"),
    ("checkpoint-gs", BASE_SPEC + "checkpoint: {s3_uri: 'gs://b/ckpt/'}\n", [], "spec.yaml:10:14",
     "checkpoint.s3_uri", "is not an S3 URI", "s3://<bucket>/checkpoints/<job>/"),
    ("checkpoint-too-long", BASE_SPEC, [f"checkpoint.s3_uri=s3://b/{'c' * api_limit('CheckpointConfig.S3Uri', 'max')}"],
     "--set checkpoint.s3_uri=", "checkpoint.s3_uri", f"SageMaker allows {api_limit('CheckpointConfig.S3Uri', 'max')}",
     "shorter prefix"),
    ("input-uri-scheme", BASE_SPEC + "inputs: {train: 'gs://b/train/'}\n", [], "spec.yaml:10:10", "inputs.train",
     "'gs://b/train/' is not an s3:// URI", "s3://<bucket>/<prefix>/"),
    ("role-s3-arn", _replace(ROLE, "role: arn:aws:s3:::demo-bucket"), [], "spec.yaml:5:1", "role",
     "is not an IAM role ARN", "an S3 location goes in output_path"),
    ("role-user-arn", _replace(ROLE, "role: arn:aws:iam::123456789012:user/alice"), [], "spec.yaml:5:1", "role",
     "is not an IAM role ARN", "arn:aws:iam::123456789012:role/SageMakerExecution, or its name"),
    ("role-short-account", _replace(ROLE, "role: arn:aws:iam::12345:role/Demo"), [], "spec.yaml:5:1", "role",
     "is not an IAM role ARN", "or its name"),
    ("role-name-shape", BASE_SPEC, ["role=my role"], "--set role=my role", "role",
     "neither an IAM role ARN nor a role name", "or its name"),
    ("role-name-too-long", BASE_SPEC, [f"role={'r' * 65}"], f"--set role={'r' * 65}", "role",
     "at most 64", "or its name"),
    ("keep-alive", BASE_SPEC, ["keep_alive_seconds=21601"], "--set keep_alive_seconds=21601", "keep_alive_seconds",
     "less than or equal to 21600", "use a value at most 21600"),
    ("max-run", BASE_SPEC + "max_run_seconds: 2419201\n", [], "spec.yaml:10:1", "max_run_seconds",
     "less than or equal to 2419200", "use a value at most 2419200"),
    ("max-wait-zero", BASE_SPEC + "spot: {max_wait_seconds: 0}\n", [], "spec.yaml:10:8", "spot.max_wait_seconds",
     "greater than or equal to 1", "use a value at least 1"),
    ("volume-zero", _replace("count: 2}", "count: 2, volume_size_gb: 0}"), [], "spec.yaml:6:43",
     "instance.volume_size_gb", "greater than or equal to 1", "use a value at least 1"),
    ("hyperparameter-value-encoded", BASE_SPEC, ["hyperparameters.note=" + "x" * 2499],
     "--set hyperparameters.note=", "hyperparameters.note", "2501 characters once JSON-encoded",
     "pass long values as a file"),
    ("hyperparameter-list-encoded", _replace("epochs: 1", "epochs: 1, layers: [" + ", ".join(["1000"] * 500) + "]"),
     [], "spec.yaml:8:", "hyperparameters.layers", "characters once JSON-encoded", "pass long values as a file"),
    ("hyperparameter-name", BASE_SPEC, ["hyperparameters." + "h" * 257 + "=1"], "--set hyperparameters.hhh",
     "hyperparameters." + "h" * 257, "SageMaker allows 256", "use a shorter name"),
    ("hyperparameter-count", BASE_SPEC.replace("hyperparameters: {trainer: gloo, epochs: 1}",
                                               "hyperparameters: " + _flow_map(_over("HyperParameters"))), [],
     "spec.yaml:8:1", "hyperparameters", "at most 100 items", "at most 100 entries"),
    ("tags-count", BASE_SPEC + "tags: " + _flow_map(51) + "\n", [], "spec.yaml:10:1", "tags", "at most 50 items",
     "at most 50 entries"),
    ("tag-key-length", BASE_SPEC + f"tags: {{{'k' * 129}: v}}\n", [], "spec.yaml:10:8", "tags." + "k" * 129,
     "at most 128 characters", "at most 128"),
    ("tag-value-length", BASE_SPEC + f"tags: {{team: {'v' * 257}}}\n", [], "spec.yaml:10:8", "tags.team",
     "at most 256 characters", "at most 256"),
    ("tag-key-comma", BASE_SPEC + "tags: {'cost,center': ml}\n", [], "spec.yaml:10:8", "tags.cost,center",
     "'cost,center' is not a tag key SageMaker accepts", "e.g. cost_center"),
    ("tag-key-aws-prefix", BASE_SPEC + "tags: {'AWS:team': ml}\n", [], "spec.yaml:10:8", "tags.AWS:team",
     "begins with 'aws:', which AWS keeps for its own tags", "e.g. team"),
    ("tag-value-character", BASE_SPEC + "tags: {team: 'ml;rm -rf'}\n", [], "spec.yaml:10:8", "tags.team",
     "the tag value has ';', a character SageMaker refuses in tags", "use letters, digits, spaces"),
    ("environment-count", BASE_SPEC + "environment: " + _flow_map(_over("Environment"), "K{}") + "\n", [],
     "spec.yaml:10:1", "environment", "at most 100 items", "at most 100 entries"),
    ("environment-name-digit", BASE_SPEC + "environment: {1ST_RUN: x}\n", [], "spec.yaml:10:15",
     "environment.1ST_RUN", "is not an environment variable name SageMaker accepts", "e.g. ST_RUN"),
    ("environment-value-length", ACCESS_KEY_SPEC % ("s" * 513), [], "spec.yaml:10:15",
     "environment.AWS_SECRET_ACCESS_KEY", "the value is 513 characters; SageMaker allows 512", "pass long values"),
    ("metrics-count", BASE_SPEC + "metrics: [" + ", ".join(["{name: m, regex: 'm=(.*)'}"] * 41) + "]\n", [],
     "spec.yaml:10:1", "metrics", "at most 40 items", "at most 40 entries"),
    ("metric-name-length", BASE_SPEC + f"metrics: [{{name: {'m' * 256}, regex: 'm=(.*)'}}]\n", [],
     "spec.yaml:10:", "metrics.0.name", "at most 255 characters", "at most 255"),
    ("metric-regex-length", BASE_SPEC + f"metrics: [{{name: m, regex: '({'x' * 500})'}}]\n", [],
     "spec.yaml:10:", "metrics.0.regex", "at most 500 characters", "at most 500"),
    ("channel-name-length", BASE_SPEC + f"inputs: {{{'c' * 65}: s3://bkt/d/}}\n", [], "spec.yaml:10:10",
     "inputs." + "c" * 65, "is not a channel name SageMaker accepts", "at most 64"),
    ("channel-count", BASE_SPEC + "inputs: " + _flow_map(21, "c{}", "s3://bkt/d/") + "\n", [], "spec.yaml:10:1",
     "inputs", "at most 20 items", "at most 20 entries"),
    ("subnet-count", BASE_SPEC + "network: {subnets: [" + ", ".join(["subnet-1"] * 17) + "], security_group_ids: [sg-1]}\n",
     [], "spec.yaml:10:", "network.subnets", "at most 16 items", "at most 16 entries"),
    ("security-group-count", BASE_SPEC + "network: {subnets: [subnet-1], security_group_ids: [" +
     ", ".join(["sg-1"] * 6) + "]}\n", [], "spec.yaml:10:", "network.security_group_ids", "at most 5 items",
     "at most 5 entries"),
    ("subnet-id-shape", BASE_SPEC + "network: {subnets: ['subnet 1'], security_group_ids: [sg-1]}\n", [],
     "spec.yaml:10:", "network.subnets.0", "'subnet 1' is not a VPC resource id", "e.g. subnet-0abc123"),
    ("security-group-id-shape", BASE_SPEC + "network: {subnets: [subnet-1], security_group_ids: ['sg_1']}\n", [],
     "spec.yaml:10:", "network.security_group_ids.0", "'sg_1' is not a VPC resource id", "e.g. sg-0abc123"),
    ("image-uri-length", _replace('framework_version: "2.3.0"', "image_uri: " + "i" * 256), [], "spec.yaml:4:1",
     "image_uri", "at most 255 characters", "at most 255"),
    # The py_version a spec leaves out is named in neither (it printed "with py_version None").
    ("unknown-framework-version", BASE_SPEC, ["framework_version=2.99.0"], "--set framework_version=2.99.0",
     "framework_version", "no SageMaker PyTorch training image for framework_version '2.99.0' on ml.c5.2xlarge",
     "use one of: 1.13.1 (py39)"),
    ("python-of-another-version", BASE_SPEC, ["py_version=py313"], "--set py_version=py313", "py_version",
     "for framework_version '2.3.0' with py_version 'py313' on ml.c5.2xlarge",
     "use py_version py311 (the Python of the 2.3.0 images), or another framework_version, one of: 1.13.1"),
]


@pytest.mark.parametrize(("text", "overrides", "where", "field", "message", "fix"),
                         [case[1:] for case in API_CASES], ids=[case[0] for case in API_CASES])
def test_validate_enforces_api_limits_with_location_field_and_fix(write_spec, text, overrides, where, field, message,
                                                                  fix):
    path = write_spec(text)
    args = ["validate", str(path)] + [item for override in overrides for item in ("--set", override)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    matches = [number for number, line in enumerate(lines) if f": {field}: " in line]
    assert len(matches) == 1, result.output
    index = matches[0]
    assert where in lines[index] and message in lines[index], result.output
    assert lines[index + 1].strip().startswith("fix: ") and fix in lines[index + 1], result.output


def test_validate_never_echoes_an_environment_value(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(ACCESS_KEY_SPEC % ("wJalrXUtnFEMI" + "K" * 600)))])
    assert result.exit_code == 2
    assert "wJalrXUtnFEMI" not in result.output


@pytest.mark.parametrize("override", [
    "role=SageMakerExecution", "role=service.role+x=y,z@w_-", "role=arn:aws-cn:iam::123456789012:role/Demo",
    "role=arn:aws-us-gov:iam::123456789012:role/service-role/Demo", "checkpoint.s3_uri=https://b.s3.amazonaws.com/c/",
    "keep_alive_seconds=21600", "max_run_seconds=2419200", "hyperparameters.note=" + "x" * 2498,
    "tags.Équipe café=Zürich 2 + ½ @ml:vision/α=β_γ-δ.",  # letters, separators and numbers of any script
])
def test_validate_accepts_values_at_the_api_limits(write_spec, override):
    result = CliRunner().invoke(main, ["validate", str(write_spec(BASE_SPEC)), "--set", override])
    assert result.exit_code == 0, result.output


def test_api_limits_are_the_ones_the_issue_names():
    """botocore 1.44.5's numbers, stated independently of the generated file they are read from."""
    assert (api_limit("ResourceConfig.KeepAlivePeriodInSeconds", "max"), api_limit("Tags", "max"),
            api_limit("HyperParameters{value}", "max"), api_limit("HyperParameters{key}", "max"),
            api_limit("StoppingCondition.MaxRuntimeInSeconds", "documented_max"),
            api_limit("AlgorithmSpecification.MetricDefinitions", "max"),
            api_limit("Environment{key}", "pattern")) == (21600, 50, 2500, 256, 28 * 86400, 40, "[a-zA-Z_][a-zA-Z0-9_]*")


def test_tag_pattern_implemented_is_the_apis():
    """Python's re has no \\p{..}: model.py checks the tag pattern by Unicode category, which holds while botocore's
    pattern is the one it was written for."""
    assert api_limit("Tags[].Key", "pattern") == api_limit("Tags[].Value", "pattern") == TAG_PATTERN


# validate is submit's gate: what submit refuses, validate refuses (exit 2), unless allowed the way submit allows it.
UNVERIFIED = _replace("ml.c5.2xlarge", "ml.c6i.xlarge")  # a SageMaker type that smtrain's catalog lacks


def test_validate_refuses_an_unverified_finding_like_submit(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(UNVERIFIED))])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("✗ ") and lines[1] == "1 problem in the job spec:"
    assert "spec.yaml:6:12: instance.type: unverified: ml.c6i.xlarge is a SageMaker training instance type" in lines[2]
    assert lines[3].strip().startswith("fix: ") and "allow_unverified: true" in lines[3]


@pytest.mark.parametrize(("text", "args"), [
    (UNVERIFIED + "allow_unverified: true\n", []),
    (UNVERIFIED, ["--allow-unverified"]),
    (UNVERIFIED, ["--set", "allow_unverified=true"]),
], ids=["in-the-spec", "flag", "override"])
def test_validate_passes_an_allowed_unverified_finding_and_shows_it(write_spec, text, args):
    result = CliRunner().invoke(main, ["validate", str(write_spec(text)), *args])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("✓ ")
    assert "unverified (allowed by allow_unverified): " in result.output and "ml.c6i.xlarge" in result.output


def test_a_spec_s_unverified_finding_names_the_spec_field_and_the_cli_flag(write_spec):
    """Before, the rule's own fix said "or set allow_unverified: true", with no flag, and validate's gate, seeing
    `allow_unverified` there, added none: a spec's user reads both ways past it, each once."""
    from orchestrator.specs.loader import load

    path = write_spec(UNVERIFIED)
    way = "; or, if you know it works, set `allow_unverified: true` in the spec (or pass --allow-unverified)"
    [finding] = [finding for finding in load(path).findings if finding.severity == "unverified"]
    result = CliRunner().invoke(main, ["validate", str(path)])

    assert finding.fix == f"check the type (smtrain instances lists the known ones){way}"
    assert f"fix: {finding.fix}" in result.output and result.output.count("allow_unverified") == 1


def test_validate_gate_appends_the_way_to_allow_when_the_rule_fix_lacks_it(write_spec):
    spot_with_pool = (BASE_SPEC + "spot: {enabled: true, max_wait_seconds: 90000}\ncheckpoint: {s3_uri: s3://bkt/c/}\n"
                      "keep_alive_seconds: 60\n")
    result = CliRunner().invoke(main, ["validate", str(write_spec(spot_with_pool))])
    assert result.exit_code == 2, result.output
    assert "keep_alive_seconds: unverified: " in result.output
    assert "fix: set keep_alive_seconds: 0 for spot jobs; or, if you know it works, set `allow_unverified: true`" \
        in result.output


def test_validate_refuses_a_local_channel_path_like_plan_and_submit(write_spec, spec_dir):
    (spec_dir / "data").mkdir()
    result = CliRunner().invoke(main, ["validate", str(write_spec(BASE_SPEC + "inputs: {train: ./data}\n"))])
    assert result.exit_code == 2, result.output
    assert "spec.yaml:10:10: inputs.train: error: " in result.output and "is a local path" in result.output
    assert "fix: upload the data and give its s3:// prefix in `inputs`" in result.output
    # the way to keep running it locally once `inputs` is s3:// (without it, smtrain local needs AWS credentials)
    assert f"`local_inputs: {{train: {spec_dir / 'data'}}}`" in result.output


def test_validate_json_marks_a_refused_unverified_spec_invalid(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(UNVERIFIED)), "-o", "json"])
    assert result.exit_code == 2
    [report] = json.loads(result.stdout)
    [problem] = report["problems"]
    assert report["valid"] is False and problem["field"] == "instance.type"
    assert problem["message"].startswith("unverified:") and problem["line"] == 6


def test_processes_per_host_equal_to_the_mode_default_is_a_notice(write_spec):
    pytorchddp = (_replace("instance: {type: ml.c5.2xlarge, count: 2}", "instance: {type: ml.g5.12xlarge, count: 1}")
                  .replace("mode: none", "mode: pytorchddp, processes_per_host: 4").replace("trainer: gloo", "trainer: ddp")
                  .replace('"2.3.0"', '"2.2.0"') + "allow_unverified: true\n")
    result = CliRunner().invoke(main, ["validate", str(write_spec(pytorchddp))])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if "distribution.processes_per_host:" in line]
    assert line.startswith("  notice: ") and line.endswith(
        "spec.yaml:7:34: distribution.processes_per_host: mode pytorchddp starts 4 processes per host on "
        "ml.g5.12xlarge anyway; the SDK does not send processes_per_host=4, and does not need to")
    different = CliRunner().invoke(main, ["validate", str(write_spec(pytorchddp.replace("host: 4", "host: 2")))])
    assert different.exit_code == 2 and "has no effect in mode pytorchddp" in different.output


def test_there_are_at_least_25_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize(("text", "overrides", "where", "field", "fragment"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_validate_rejects_with_location_field_and_fix(write_spec, text, overrides, where, field, fragment):
    path = write_spec(text)
    args = ["validate", str(path)] + [item for override in overrides for item in ("--set", override)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    problem_lines = [line for line in result.output.splitlines() if f"{where}:" in line]
    assert problem_lines, f"no problem reported at {where}:\n{result.output}"
    if field:
        assert any(f": {field}:" in line for line in problem_lines), result.output
    assert fragment in result.output


def test_validate_reports_every_problem_at_once(write_spec):
    path = write_spec(BASE_SPEC.replace("count: 2", "count: 0").replace("mode: none", "mode: mpx"))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert "2 problems in the job spec" in result.output


def test_validate_missing_file_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "no such spec file" in result.output


def test_a_mistyped_spec_name_is_answered_with_the_spec_beside_it(tmp_path, monkeypatch):
    """`smtrain local job.yml` where the file is job.yaml: the fix names it, not the examples folder."""
    (tmp_path / "job.yaml").write_text("name: x\n")
    monkeypatch.chdir(tmp_path)
    for typed, meant in (("job.yml", "job.yaml"), (str(tmp_path / "jbo.yaml"), str(tmp_path / "job.yaml"))):
        result = CliRunner().invoke(main, ["validate", typed])
        assert result.exit_code == 2
        assert f"no such spec file\n  To fix: did you mean {meant}?" in result.output, result.output


def test_a_quoted_pattern_no_shell_expanded_is_answered_with_what_it_matches(tmp_path, monkeypatch):
    """`smtrain validate "specs/*.yaml"` in a CI step: the quotes kept the pattern from the shell, and the answer
    only said the file did not exist, as though the folder were wrong."""
    (tmp_path / "specs").mkdir()
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / "specs" / name).write_text("name: x\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["validate", "specs/*.yaml", "specs/*.yml"])
    assert result.exit_code == 2
    assert ("To fix: the shell did not expand this pattern (it was quoted): write it unquoted, and the shell passes "
            "the 2 files it matches (specs/a.yaml, ...)") in result.output, result.output
    assert "To fix: no file matches this pattern; check the folder and the extension" in result.output


def test_bad_override_syntax(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(BASE_SPEC)), "--set", "instance.count"])
    assert result.exit_code == 2
    assert "expected key.path=value" in result.output


def test_validate_json_lists_problems(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(BASE_SPEC)), "--set", "instance.count=0", "-o", "json"])
    assert result.exit_code == 2
    [report] = json.loads(result.stdout)
    assert report["valid"] is False
    assert report["problems"][0]["field"] == "instance.count"
    assert report["problems"][0]["override"] == "instance.count=0" and report["problems"][0]["fix"]


@pytest.mark.parametrize(("old", "new", "field", "suggestion"),
                         [("instance:", "instanse:", "instanse", "instance"),
                          ("", "metrics: [{name: loss, regx: 'loss=([0-9.]+)'}]\n", "metrics.0.regx", "regex")],
                         ids=["top-level", "in-a-list-item"])
def test_a_misspelled_required_key_is_one_problem_not_also_a_missing_one(write_spec, old, new, field, suggestion):
    """docs/specs.md shows `instanse:` as one problem; pydantic also said `instance: Field required`, whose fix,
    `add instance:`, sent the user to add the key they had written (and led `plan -o json` as its error)."""
    text = _replace(old, new) if old else BASE_SPEC + new
    result = CliRunner().invoke(main, ["validate", str(write_spec(text)), "-o", "json"])
    [report] = json.loads(result.stdout)
    assert [(problem["field"], problem["fix"]) for problem in report["problems"]] == \
        [(field, f"did you mean `{suggestion}`?")]


def test_a_missing_required_key_beside_an_unrelated_unknown_one_is_still_reported(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(_replace("instance:", "colour:"))), "-o", "json"])
    [report] = json.loads(result.stdout)
    assert sorted(problem["field"] for problem in report["problems"]) == ["colour", "instance"]
