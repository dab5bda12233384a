"""A new user's mistakes in a spec: each is answered at the line where it was written, with a fix that is the
change to make (not the parser's or the validator's own words), exit 2 and nothing sent."""

from __future__ import annotations

import codecs
import json

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.loader import InvalidTuningSpec, load, load_tuning

SPEC = """\
name: demo
entry_point: train.py
framework_version: "2.10.0"
instance:
  type: ml.c5.2xlarge
  count: 2
environment:
  NCCL_DEBUG: WARN
inputs:
  train: s3://demo-bucket/train/
output_path: s3://demo-bucket/outputs/
"""


def _edited(old: str, new: str) -> str:
    assert old in SPEC, old
    return SPEC.replace(old, new)


def _problems(write_spec, text: str, *args: str) -> list[dict]:
    path = write_spec("")
    path.write_bytes(text.encode("utf-8"))
    result = CliRunner().invoke(main, ["validate", str(path), "-o", "json", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    [report] = json.loads(result.stdout)
    return [(problem["line"], problem["field"], problem["message"], problem["fix"]) for problem in report["problems"]]


TAB_INDENTED = _edited("  type: ml.c5.2xlarge\n  count: 2", "\ttype: ml.c5.2xlarge\n\tcount: 2")


@pytest.mark.parametrize("text", [TAB_INDENTED, TAB_INDENTED.replace("\n", "\r\n"),
                                  codecs.BOM_UTF8.decode() + TAB_INDENTED.replace("\n", "\r\n")],
                         ids=["lf", "crlf", "bom-crlf"])
def test_a_tab_in_the_indentation_is_named_with_its_line(write_spec, text):
    assert _problems(write_spec, text) == [
        (5, None, "YAML: a tab character; YAML indents with spaces only",
         "replace the tab on line 5 with spaces (your editor can insert spaces for the Tab key)")]


def test_a_second_document_is_named_and_its_fix_is_to_remove_it(write_spec):
    assert _problems(write_spec, SPEC + "---\nname: other\n") == [
        (12, None, "YAML: a second document starts here (`---`); a spec file holds one",
         "remove this `---` and what follows it, or put the other document in a file of its own")]


@pytest.mark.parametrize(("value", "tag"), [
    ("!Ref ExecutionRole", "!Ref"),
    ("!Sub 'arn:aws:iam::${AWS::AccountId}:role/x'", "!Sub"),
    ("!!python/object/apply:os.system [id]", "!!python/object/apply:os.system"),
], ids=["cloudformation-ref", "cloudformation-sub", "python-object"])
def test_a_tagged_value_is_named_by_its_tag_and_the_fix_is_the_value_itself(write_spec, value, tag):
    """PyYAML's words were "could not determine a constructor for the tag ...", fixed by "check indentation and
    quoting"."""
    [(line, _, message, fix)] = _problems(write_spec, SPEC + f"role: {value}\n")
    assert line == 12
    assert message.startswith(f"YAML: a value tagged {tag}, which smtrain does not build"), message
    assert fix == f"write the value itself in place of {tag} (quote it if it is text starting with !)"


def test_a_tuning_spec_indented_with_a_tab_gets_the_same_answer(spec_dir):
    (spec_dir / "tune.yaml").write_text("job: spec.yaml\nobjective:\n\tmetric: loss\n")
    with pytest.raises(InvalidTuningSpec) as refused:
        load_tuning(spec_dir / "tune.yaml")
    [problem] = refused.value.problems
    assert (problem.where, problem.message) == (f"{spec_dir / 'tune.yaml'}:3:1",
                                                "YAML: a tab character; YAML indents with spaces only")


@pytest.mark.parametrize(("old", "new", "line", "column", "named"), [
    ("name: demo", "name:\u00a0demo", 1, 6, "no-break space (U+00A0)"),
    ('framework_version: "2.10.0"', 'framework_version:\u3000"2.10.0"', 3, 19, "ideographic space (U+3000)"),
    ("  type: ml.c5.2xlarge", "  type:\u202fml.c5.2xlarge", 5, 8, "narrow no-break space (U+202F)"),
], ids=["no-break-space", "ideographic-space", "narrow-no-break-space"])
def test_a_space_that_only_looks_like_one_is_named_where_it_is(write_spec, old, new, line, column, named):
    """PyYAML reads `name:<U+00A0>demo` as text and stops a line later with "mapping values are not allowed
    here", which names neither the character nor its place."""
    path = write_spec("")
    path.write_bytes(_edited(old, new).encode("utf-8"))
    result = CliRunner().invoke(main, ["validate", str(path), "-o", "json"])
    [problem] = json.loads(result.stdout)[0]["problems"]
    assert (result.exit_code, problem["line"], problem["column"]) == (2, line, column)
    assert f"a {named} at line {line}, column {column}, where YAML takes only a plain space" in problem["message"]
    assert problem["fix"].startswith(f"replace the {named.split(' (')[0]} with a plain space")


@pytest.mark.parametrize(("name", "fix"), [
    ('"\\ud800"', "\\ud800 is half of a UTF-16 surrogate pair, no character of its own: write the character itself, "
                  "or its \\U escape with 8 hex digits (\\U0001F600)"),
    ('"\\ud83d\\ude00"', "\\ud83d\\ude00 is a UTF-16 surrogate pair, which YAML does not join into one character: "
                         "write \\U0001F600 (grinning face (U+1F600)), or the character itself"),
    ('"\\U00110000"', "\\U00110000 is past U+10FFFF, the last Unicode code point: check the hex digits"),
    ('"C:\\data"', "in double quotes a backslash starts an escape (\\n, \\t, \\uXXXX): write a backslash as \\\\, "
                   "or put the text in single quotes, which keep it as written"),
], ids=["surrogate", "surrogate-pair", "past-last-code-point", "unknown-escape"])
def test_an_escape_in_double_quotes_that_is_no_character_says_what_to_write(write_spec, name, fix):
    """PyYAML's "found invalid Unicode character escape code" came with "check indentation and quoting"."""
    [(line, _, _, said)] = _problems(write_spec, _edited("name: demo", f"name: {name}"))
    assert (line, said) == (1, fix)


SDK_ARGUMENTS = [  # (an Estimator argument as written in a spec, the field named, the fix's `did you mean`)
    ("metric_definitions: [{Name: 'train:loss', Regex: 'loss=(\\S+)'}]", "metric_definitions",
     "did you mean `metrics: [{name: train:loss, regex: 'loss=(\\S+)'}]`?"),
    ("instance_type: ml.g5.xlarge", "instance_type", "did you mean `instance: {type: ml.g5.xlarge}`?"),
    ("instance_count: 2", "instance_count", "did you mean `instance: {count: 2}`?"),
    ("max_run: 3600", "max_run", "did you mean `max_run_seconds: 3600`?"),
    ("use_spot_instances: true", "use_spot_instances", "did you mean `spot: {enabled: true}`?"),
    ("max_wait: 7200", "max_wait", "did you mean `spot: {max_wait_seconds: 7200}`?"),
    ("checkpoint_s3_uri: s3://demo-bucket/ckpt/", "checkpoint_s3_uri",
     "did you mean `checkpoint: {s3_uri: s3://demo-bucket/ckpt/}`?"),
    ("base_job_name: demo", "base_job_name", "did you mean `name: demo`?"),
    ("subnets: [subnet-1]", "subnets", "did you mean `network: {subnets: [subnet-1]}`?"),
    ("distribution: {torch_distributed: {enabled: true}}", "distribution.torch_distributed",
     "did you mean `distribution: {mode: torch_distributed}`?"),
]


@pytest.mark.parametrize(("addition", "field", "fix"), SDK_ARGUMENTS, ids=[field for _, field, _ in SDK_ARGUMENTS])
def test_an_estimator_argument_of_the_sagemaker_sdk_gets_the_spec_key_with_its_value(write_spec, addition, field, fix):
    """A user bringing an Estimator call's arguments got the list of every key, or the nearest spelling
    (`use_spot_instances` -> `instance`); the SDK's names a spec shares pass."""
    [(_, named, _, said)] = _problems(write_spec, SPEC + addition + "\n")
    assert named == field
    assert said == f"{fix} (`{field}` is the SageMaker Python SDK Estimator's name)"


def test_base_job_name_without_name_is_one_problem_with_the_name_meant(write_spec):
    """The SDK's `base_job_name` written in place of `name:` was two problems, the unknown key and `name: Field
    required` (`add name:`), which asked for what the user did write."""
    assert _problems(write_spec, _edited("name: demo", "base_job_name: demo")) == [
        (1, "base_job_name", "Extra inputs are not permitted",
         "did you mean `name: demo`? (`base_job_name` is the SageMaker Python SDK Estimator's name)")]


TAGS_WHY = "a list of `Key`/`Value` pairs is the SageMaker API's and SDK's form"
ENVIRONMENT_WHY = ("a list of `NAME=value` items or `Name`/`Value` pairs is a shell's, docker's or a container "
                   "definition's form")
SDK_SHAPES = [  # (a mapping field written in another tool's shape, the mapping meant with the values written, why)
    ("tags: [{Key: team, Value: ml}, {Key: project, Value: '7'}]", "tags: {team: ml, project: '7'}", TAGS_WHY),
    ("environment: [NCCL_DEBUG=WARN, OPTS=-x=1]", "environment: {NCCL_DEBUG: WARN, OPTS: -x=1}", ENVIRONMENT_WHY),
    ("environment: [{Name: NCCL_DEBUG, Value: WARN}]", "environment: {NCCL_DEBUG: WARN}", ENVIRONMENT_WHY),
    ("environment: [WANDB_API_KEY=k3y-v4lue, NCCL_DEBUG=WARN]",
     "environment: {WANDB_API_KEY: '****', NCCL_DEBUG: WARN}", ENVIRONMENT_WHY),
    ("""hyperparameters: '{"epochs": 3, "lr": 0.05, "trainer": "gloo"}'""",
     "hyperparameters: {epochs: 3, lr: 0.05, trainer: gloo}", "JSON text is the AWS CLI's form"),
]


@pytest.mark.parametrize(("written", "meant", "why"), SDK_SHAPES,
                         ids=["tags-key-value", "environment-equals", "environment-name-value", "environment-secret",
                              "hyperparameters-json"])
def test_a_mapping_written_in_the_sdks_shape_gets_the_mapping_with_its_values(write_spec, written, meant, why):
    """Before: the fix every non-mapping gets, "tags is a mapping: write `key: value` pairs under it", with nothing
    of what the user wrote; a value under a secret-looking name stays masked."""
    text = _edited("environment:\n  NCCL_DEBUG: WARN\n", written + "\n")
    [(line, field, _, said)] = _problems(write_spec, text)
    assert (line, field) == (7, written.partition(":")[0])
    assert said == f"did you mean `{meant}`? ({why}; a spec writes a mapping)"
    assert "k3y-v4lue" not in said


def test_a_typo_inside_a_merged_anchor_is_reported_where_the_anchor_writes_it(write_spec):
    """`<<: *defaults` brings the anchor's keys in: the misspelled one is on the anchor's line, not on the line of
    the mapping that merges it."""
    text = _edited("instance:\n  type: ml.c5.2xlarge\n  count: 2\n",
                   "environment: &cluster\n  type: ml.c5.2xlarge\n  cuont: 2\n"
                   "instance:\n  <<: *cluster\n  count: 2\n").replace("environment:\n  NCCL_DEBUG: WARN\n", "")
    problems = _problems(write_spec, text)
    assert (6, "instance.cuont", "Extra inputs are not permitted", "did you mean `count`?") in problems


@pytest.mark.parametrize(("value", "message", "fix"), [
    ("true", "YAML read true as the boolean true, and this field takes text",
     'write it in quotes: WANDB_DISABLED: "true"'),
    ("yes", "YAML read yes as the boolean true, and this field takes text",
     'write it in quotes: WANDB_DISABLED: "yes"'),
    ("", "Input should be a valid string",
     'give it a value after the colon ("" for an empty one): WANDB_DISABLED: "..."'),
    ("[1, 2]", "Input should be a valid string", 'give one string, not a list: WANDB_DISABLED: "..."'),
])
def test_an_environment_value_yaml_reads_as_no_string_gets_the_text_to_write(write_spec, value, message, fix):
    text = _edited("  NCCL_DEBUG: WARN", f"  WANDB_DISABLED: {value}")
    assert _problems(write_spec, text) == [(8, "environment.WANDB_DISABLED", message, fix)]


def test_a_list_item_of_the_wrong_type_is_named_as_an_item_not_a_key(write_spec):
    text = SPEC + "network: {subnets: [subnet-0abc123, 12345], security_group_ids: [sg-0abc123]}\n"
    [(_, field, _, fix)] = _problems(write_spec, text)
    assert (field, fix) == ("network.subnets.1", 'write it in quotes: "12345" (item 2 of subnets)')
    [(_, field, _, fix)] = _problems(write_spec, SPEC + "metrics: [{name: loss, regex: 'loss=(.*)'}, 5]\n")
    assert (field, fix) == ("metrics.1", "each item of metrics is a mapping: write `key: value` pairs in it")


def test_a_misspelled_region_is_located_and_the_meant_one_suggested(write_spec):
    assert _problems(write_spec, SPEC + "region: us-east1\n") == [
        (12, "region", "no SageMaker PyTorch training images are published in region 'us-east1'",
         "did you mean `us-east-1`? If not: pick another region, or give image_uri (an image in your own ECR)")]


def test_plan_suggests_the_region_meant_for_a_misspelled_aws_region(write_spec, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west1")
    result = CliRunner().invoke(main, ["plan", str(write_spec(SPEC))])
    assert result.exit_code == 2, result.output
    assert "To fix: did you mean `eu-west-1`?" in result.output


@pytest.mark.parametrize(("old", "new", "line", "field", "meant"), [
    ("train: s3://demo-bucket/train/", "train: s3:/demo-bucket/train/", 10, "inputs.train", "s3://demo-bucket/train/"),
    ("train: s3://demo-bucket/train/", "train: S3://demo-bucket/train/", 10, "inputs.train", "s3://demo-bucket/train/"),
    ("output_path: s3://demo-bucket/outputs/", "output_path: s3//demo-bucket/outputs/", 11, "output_path",
     "s3://demo-bucket/outputs/"),
])
def test_a_mistyped_s3_scheme_gets_the_uri_meant(write_spec, old, new, line, field, meant):
    """`s3:/bucket/...` in `inputs` was taken for a local folder beside the spec ("local path .../s3:/bucket/...
    does not exist")."""
    [(at, named, _, fix)] = _problems(write_spec, _edited(old, new))
    assert (at, named, fix) == (line, field, f"did you mean {meant}?")


@pytest.mark.parametrize(("count", "fix"), [("2.0", "write it without the decimal point: count: 2"),
                                            ("2.5", "write a whole number: count: 2 or count: 3")])
def test_a_whole_number_field_given_a_decimal_gets_the_whole_number_to_write(write_spec, count, fix):
    """There was no fix at all: only pydantic's `Input should be a valid integer`."""
    assert _problems(write_spec, _edited("count: 2", f"count: {count}")) == [
        (6, "instance.count", "Input should be a valid integer", fix)]


def test_a_tuning_spec_refused_for_its_shape_says_it_is_the_tuning_spec(spec_dir):
    """The shape checks are the job spec's: their refusal said `1 problem in the job spec` of a tuning spec."""
    (spec_dir / "tune.yaml").write_text("job: spec.yaml\ntags: " + "[" * 40 + "]" * 40 + "\n")
    with pytest.raises(InvalidTuningSpec) as refused:
        load_tuning(spec_dir / "tune.yaml")
    assert str(refused.value).startswith("1 problem in the tuning spec:")
    assert refused.value.problems[0].where.startswith(f"{spec_dir / 'tune.yaml'}:2:")


# S3's bucket-name rules, for every S3 URI a spec gives: SageMaker's URI pattern takes `s3://My_Bucket/`, and the
# job would fail after its source was packed (NoSuchBucket), or at a channel it cannot read.
@pytest.mark.parametrize(("addition", "line", "field"), [
    ("checkpoint: {s3_uri: s3://My_Bucket/ckpt/}\n", 12, "checkpoint.s3_uri"),
    ("tensorboard: {s3_uri: s3://My_Bucket/tb/}\n", 12, "tensorboard.s3_uri"),
    ("inputs:\n  train: s3://My_Bucket/train/\n", 10, "inputs.train"),
    ("inputs:\n  train: {uri: s3://My_Bucket/train/, input_mode: FastFile}\n", 10, "inputs.train.uri"),
    ("code_location: s3://My_Bucket/code/\n", 12, "code_location"),
])
def test_every_s3_uri_names_a_bucket_s3_could_have(write_spec, addition, line, field):
    text = (_edited("inputs:\n  train: s3://demo-bucket/train/\n", "") if addition.startswith("inputs") else SPEC)
    text = text.replace("output_path:", addition + "output_path:") if addition.startswith("inputs") else text + addition
    [(at, named, message, fix)] = _problems(write_spec, text)
    assert (at, named) == (line, field)
    assert message.startswith("'My_Bucket' is not an S3 bucket name: it holds 'B', 'M', '_'")
    assert fix.endswith("e.g. s3://my-bucket/")


# A prefix joined to one that ends in `/` (in aws-samples/generative-ai-on-amazon-sagemaker#242 the SDK's
# `default_bucket_prefix` of `shared/`): SageMaker takes the request and fails the job at its data download, after
# the instances started: `ClientError: Data download failed:Failed to download data. S3 key:
# s3://.../shared//train-.../requirements.txt has an illegal char sub-sequence '//' in it`.
def _with_input(channel: str) -> str:
    return _edited("  train: s3://demo-bucket/train/\n", channel)


@pytest.mark.parametrize(("text", "line", "field", "uri"), [
    (_with_input("  train: s3://demo-bucket/shared//train/\n"), 10, "inputs.train", "s3://demo-bucket/shared//train/"),
    (_with_input("  train: {uri: 's3://demo-bucket/shared//train/', input_mode: FastFile}\n"), 10, "inputs.train.uri",
     "s3://demo-bucket/shared//train/"),
    (_edited("demo-bucket/outputs/", "demo-bucket/shared//outputs/"), 11, "output_path",
     "s3://demo-bucket/shared//outputs/"),
    (SPEC + "checkpoint: {s3_uri: 's3://demo-bucket/shared//ckpt/'}\n", 12, "checkpoint.s3_uri",
     "s3://demo-bucket/shared//ckpt/"),
    (SPEC + "tensorboard: {s3_uri: 's3://demo-bucket/shared//tb/'}\n", 12, "tensorboard.s3_uri",
     "s3://demo-bucket/shared//tb/"),
    (SPEC + "code_location: s3://demo-bucket/shared//code/\n", 12, "code_location", "s3://demo-bucket/shared//code/"),
    (SPEC + "checkpoint: {s3_uri: 'https://demo-bucket.s3.amazonaws.com/a///ckpt/'}\n", 12, "checkpoint.s3_uri",
     "https://demo-bucket.s3.amazonaws.com/a///ckpt/"),
], ids=["input", "input-uri", "output_path", "checkpoint", "tensorboard", "code_location", "checkpoint-https"])
def test_a_doubled_slash_in_any_s3_uri_is_refused_at_its_line_with_the_uri_meant(write_spec, text, line, field, uri):
    """Before: `validate` passed it and the job failed on SageMaker at its data download."""
    [(at, named, message, fix)] = _problems(write_spec, text)
    assert (at, named) == (line, field)
    assert message == (f"{uri!r} has '//' in its path, which SageMaker refuses in an S3 key when it downloads the "
                       "job's data")
    scheme, _, rest = uri.partition("://")
    assert fix == f"write it as {scheme}://{rest.replace('///', '/').replace('//', '/')}"


@pytest.mark.parametrize(("bucket", "why", "meant"), [
    ("xn--data", "begins with 'xn--', a prefix S3 keeps for itself", "data"),
    ("sthree-data", "begins with 'sthree-', a prefix S3 keeps for itself", "data"),
    ("a" * 64, "is 64 characters long; S3 bucket names are 3 to 63 characters long", "a" * 63),
    ("ab", "is 2 characters long; S3 bucket names are 3 to 63 characters long", "my-bucket"),
    ("192.168.1.1", "is an IP address, which S3 refuses as a bucket name", "my-bucket"),
    ("data..sets", "has two dots in a row, which S3 refuses in a bucket name", "data.sets"),
    ("data-", "must begin and end with a letter or digit", "data"),
])
def test_each_bucket_naming_rule_is_named_with_a_bucket_that_keeps_it(write_spec, bucket, why, meant):
    [(_, field, message, fix)] = _problems(write_spec, SPEC + f"checkpoint: {{s3_uri: 's3://{bucket}/ckpt/'}}\n")
    assert (field, message) == ("checkpoint.s3_uri", f"{bucket!r} is not an S3 bucket name: it {why}")
    assert fix.endswith(f"e.g. s3://{meant}/")


@pytest.mark.parametrize("bucket", ["my-ap-1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o6p-s3alias", "datasets--usw2-az1--x-s3"])
def test_an_access_point_alias_and_a_directory_bucket_are_buckets_a_uri_may_name(write_spec, bucket):
    """S3 keeps these suffixes from general purpose buckets because they name access points and directory
    buckets, which a channel or checkpoint may use."""
    path = write_spec(_edited("s3://demo-bucket/train/", f"s3://{bucket}/train/"))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output


# The training toolkit writes its own SM_* variables over the container's environment (docs/sagemaker-contract.md
# §4): a value the spec gives them never reaches the script. SMTRAIN_* are smtrain's own.
@pytest.mark.parametrize(("name", "message", "fix"), [
    ("SM_NUM_GPUS", "SM_NUM_GPUS is set by the SageMaker training toolkit in every job, replacing the value given here",
     "remove it; to run fewer processes per host, set distribution.processes_per_host (mode mpi) or pick an "
     "instance with fewer GPUs"),
    ("SM_TRAINING_ENV", "SM_TRAINING_ENV is set by the SageMaker training toolkit in every job, replacing the value "
     "given here", "remove it, or give your own setting a name of its own, e.g. MY_TRAINING_ENV"),
    ("CURRENT_HOST", "CURRENT_HOST is set by the SageMaker training toolkit in every job, replacing the value given "
     "here", "remove it, or give your own setting a name of its own, e.g. MY_CURRENT_HOST"),
    ("SM_CHANNEL_EVAL", "SM_CHANNEL_EVAL: the training toolkit sets SM_CHANNEL_<NAME> for each channel of inputs, "
     "replacing a value given here, and scripts read these variables as the job's channels",
     "remove it, and add the channel under inputs, e.g. inputs: {eval: s3://my-bucket/eval/}"),
    ("SM_HP_LR", "SM_HP_LR: the training toolkit sets SM_HP_<NAME> for each hyperparameter, replacing a value given "
     "here", "remove it, and set it under hyperparameters, e.g. lr: ..."),
    ("SMTRAIN_GPU_STANDIN", "SMTRAIN_GPU_STANDIN: SMTRAIN_* names are smtrain's own; smtrain local sets some of them "
     "itself, and on SageMaker the script would see a value smtrain never sets", "rename it, e.g. MY_GPU_STANDIN"),
])
def test_an_environment_name_the_container_sets_itself_is_refused_with_the_setting_meant(write_spec, name, message,
                                                                                           fix):
    assert _problems(write_spec, _edited("NCCL_DEBUG: WARN", f"{name}: '1'")) == [
        (8, f"environment.{name}", message, fix)]


def test_an_sm_name_of_the_users_own_is_kept(write_spec):
    path = write_spec(_edited("NCCL_DEBUG: WARN", "SM_EXPERIMENT_TAG: baseline"))
    assert CliRunner().invoke(main, ["validate", str(path)]).exit_code == 0


def test_the_variables_refused_are_the_ones_the_installed_toolkit_sets():
    """Read from the toolkit itself: every key of `Environment.to_env_vars` becomes SM_<KEY>, and the three it
    assigns to os.environ while it reads its configuration."""
    import inspect
    import re

    environment = pytest.importorskip("sagemaker_training.environment")
    from orchestrator.contract import TOOLKIT_SET_VARIABLES

    keys = re.findall(r'^\s*(?:env\[)?"(\w+)"[\]:]', inspect.getsource(environment.Environment.to_env_vars), re.M)
    assigned = re.findall(r"os\.environ\[params\.(\w+)\] =", inspect.getsource(environment.Environment.__init__))
    params = pytest.importorskip("sagemaker_training.params")
    assert TOOLKIT_SET_VARIABLES == {f"SM_{key.upper()}" for key in keys} | {getattr(params, name) for name in assigned}


def test_a_channel_name_too_long_gets_a_shortened_one(write_spec):
    long_name = "validation_" + "x" * 60
    [(_, _, message, fix)] = _problems(write_spec, _edited("train: s3://", f"{long_name}: s3://"))
    assert message == f"{long_name[:64]!r}... is not a channel name SageMaker accepts (71 characters)"
    assert fix == f"use letters, digits, '.', '-' and '_' (at most 64), e.g. {long_name[:64]}"


def test_a_job_name_with_an_underscore_gets_the_name_with_a_hyphen(write_spec):
    [(line, field, _, fix)] = _problems(write_spec, _edited("name: demo", "name: mlp_torchrun"))
    assert (line, field, fix) == (1, "name", "e.g. name: mlp-torchrun")


def test_a_job_name_refusal_states_sagemaker_s_rule_which_allows_hyphens_in_a_row(write_spec):
    """It said "use letters, digits and single hyphens", but `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}` takes `a--b`."""
    [(_, _, message, _)] = _problems(write_spec, _edited("name: demo", "name: -demo"))
    path = write_spec("")
    path.write_text(_edited("name: demo", "name: my--demo"))
    assert load(path).spec.name == "my--demo"
    assert message == "'-demo' is not a valid job name: use letters, digits and hyphens, starting and ending with " \
                      "a letter or digit"


def test_a_count_written_as_a_list_of_one_gets_the_number(write_spec):
    [(line, field, _, fix)] = _problems(write_spec, _edited("count: 2", "count: [2]"))
    assert (line, field, fix) == (6, "instance.count", "write the value itself, not a list: count: 2")


def test_a_top_level_key_holding_an_anchor_is_told_where_anchors_go(write_spec):
    text = "common: &common {type: ml.c5.2xlarge}\n" + _edited("  type: ml.c5.2xlarge\n", "  <<: *common\n")
    [(line, field, _, fix)] = _problems(write_spec, text)
    assert (line, field, fix) == (1, "common", "to keep the anchor, rename the key x-common (top-level keys "
                                               "starting with x- are yours, left out of the spec), or define the "
                                               "anchor inside a field the spec knows")


def test_an_x_prefixed_top_level_key_holds_anchors_for_the_spec_to_use(write_spec):
    """As docker-compose's extension fields: defined once, merged where needed, and left out of the spec."""
    text = "x-cluster: &cluster {type: ml.c5.2xlarge}\n" + _edited("  type: ml.c5.2xlarge\n", "  <<: *cluster\n")
    result = CliRunner().invoke(main, ["plan", str(write_spec(text)), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert '"x-cluster"' not in result.output and "ml.c5.2xlarge" in result.output


def test_a_dropped_letter_is_likelier_than_a_changed_one_in_a_region(write_spec):
    [(_, _, _, fix)] = _problems(write_spec, SPEC + "region: us-est-1\n")
    assert fix.startswith("did you mean `us-east-1`?")
