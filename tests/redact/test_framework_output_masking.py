"""Masking what the supported frameworks really print: their settings are shown, their credentials are not.

Every line below was printed by the framework named (installed versions: transformers 5.24, DeepSpeed 0.19.8,
boto3 1.44.5, the SageMaker training toolkit), offline, and copied verbatim (a timestamp or an object's address is
the one of that run):

- the toolkit: `smtrain local` of a spec with `hyperparameters: {max_new_tokens: 256, max_tokens_per_batch: 4096,
  num_key_value_heads: 8, hub_token: hf_...}`, the command line and the environment it logs;
- transformers: `print(TrainingArguments(output_dir="/opt/ml/model", report_to="none"))`;
- DeepSpeed: `deepspeed.initialize` on the CPU with its logger at INFO (the default before 0.17), the
  `DeepSpeedEngine configuration:` lines; `print(get_monitor_config({"comet": {"api_key": ...}}))`;
- boto3: `boto3.set_stream_logger("botocore", logging.DEBUG)`, then one S3 call with temporary credentials to a
  closed local port.
"""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.redact import MASK, mask_text, redact, secret_values

HUB_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
HYPERPARAMETERS = {"max_new_tokens": 256, "max_tokens_per_batch": 4096, "num_key_value_heads": 8,
                   "pad_token_id": 0, "hub_token": HUB_TOKEN}
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEtOkEnFwoGZXIvYXdzEBYaDFakeSessionTokenForTestOnly0123456789abcdefAbCdEf=="


def test_counts_of_text_tokens_and_attention_keys_are_shown_and_the_hub_token_is_not():
    """The toolkit's command line and SM_HP_ variables: `--max_tokens_per_batch 4096` read `****`, and 4096 became
    a known secret, so every "4096" of the job's log (a hidden size, a step) read `****` too."""
    secrets = secret_values(HYPERPARAMETERS)
    assert secrets == {HUB_TOKEN}
    log = ("/usr/bin/python3 -- train.py --hub_token " + HUB_TOKEN + " --max_new_tokens 256 --max_tokens_per_batch 4096"
           " --num_key_value_heads 8\nSM_HP_MAX_TOKENS_PER_BATCH=4096\nSM_HP_NUM_KEY_VALUE_HEADS=8\n"
           '  "hidden_size": 4096,\n[2026-11-28 09:41:16,420] [INFO] [config.py:678:print]   hybrid_engine ......'
           ".......... enabled=False max_out_tokens=512 inference_tp_size=1 release_inference_cache=False "
           "pin_parameters=True tp_gather_partition_size=8 enable_cuda_graph=False")
    assert mask_text(log, secrets) == log.replace(HUB_TOKEN, MASK)
    assert redact({"HyperParameters": HYPERPARAMETERS}) == {"HyperParameters": {**HYPERPARAMETERS, "hub_token": MASK}}


def test_transformers_boolean_word_is_shown():
    """TrainingArguments of transformers 5 prints `include_num_input_tokens_seen=no` in every Trainer's log."""
    assert mask_text("include_num_input_tokens_seen=no,") == "include_num_input_tokens_seen=no,"


def test_a_number_that_could_be_a_pin_or_a_key_stays_masked():
    assert mask_text("--pin_secret 42 --api_key 12345678 --max_tokens 1234567890123456") == (
        f"--pin_secret {MASK} --api_key {MASK} --max_tokens {MASK}")
    assert secret_values({"api_key": 12345678, "DB_PASSWORD": 31415926535}) == {"12345678", "31415926535"}


def test_the_warning_names_only_hyperparameters_that_masking_hides(tmp_path):
    """`validate` warned that `max_new_tokens` looks secret and is masked: it was neither."""
    (tmp_path / "train.py").write_text("print(1)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "hf", "entry_point": "train.py", "framework_version": "2.10.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1},
                                    "hyperparameters": HYPERPARAMETERS}))
    result = CliRunner().invoke(main, ["validate", str(spec), "-o", "json"])
    assert result.exit_code == 0, result.output
    warned = {problem["field"] for problem in json.loads(result.output)[0]["warnings"]
              if problem["rule"] == "hyperparameter-on-command-line"}
    assert warned == {"hyperparameters.hub_token"}


def test_boto3s_debug_lines_hide_the_session_token():
    """On SageMaker a job's credentials come from its role, so smtrain knows no value: the token is masked by its
    form (STS tokens start `IQoJb3JpZ2luX2Vj`) and by its header's name."""
    canonical = "x-amz-security-token:" + SESSION_TOKEN
    headers = ("2026-11-28 09:43:04,933 botocore.endpoint [DEBUG] Sending http request: <AWSPreparedRequest "
               "stream_output=False, method=GET, url=http://127.0.0.1:9/b?list-type=2&encoding-type=url, headers={"
               "'X-Amz-Date': b'20261128T094304Z', 'X-Amz-Security-Token': b'" + SESSION_TOKEN + "', "
               "'Authorization': b'AWS4-HMAC-SHA256 Credential=ASIAZZTESTKEY7EXAMPL/20261128/us-east-1/s3/aws4_request"
               ", SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=9f41d5a7e53390bd"
               "8cb0ea6572365ff9fce10d3c09b74da001bfa5fd644812c4'}>")
    assert mask_text(canonical) == "x-amz-security-token:" + MASK
    shown = mask_text(headers)
    assert SESSION_TOKEN not in shown and "ASIAZZTESTKEY7EXAMPL" not in shown
    assert f"'X-Amz-Security-Token': b'{MASK}'" in shown and "'X-Amz-Date': b'20261128T094304Z'" in shown


def test_quoted_values_mapping_entries_and_bearer_tokens_are_masked():
    comet = ("comet=CometConfig(enabled=False, samples_log_interval=100, project='p', workspace=None, "
             "api_key='CmT4pIkEy0123456789abcdef', experiment_name=None, experiment_key=None, online=None, mode=None)")
    assert mask_text(comet) == comet.replace("CmT4pIkEy0123456789abcdef", MASK)
    wandb_key = "0123456789abcdef0123456789abcdef01234567"
    assert mask_text(f'export WANDB_API_KEY="{wandb_key}"') == f'export WANDB_API_KEY="{MASK}"'
    assert mask_text(f'{{"comet": {{"api_key": "{wandb_key}"}}}}') == f'{{"comet": {{"api_key": "{MASK}"}}}}'
    bearer = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r"
    assert mask_text(f"Authorization: Bearer {bearer}") == f"Authorization: Bearer {MASK}"


def test_a_nested_mapping_under_a_token_name_is_shown():
    """DeepSpeed's `'layer_token_lr_schedule': {'enabled': False}` is judged by its entries, not masked as a value."""
    line = (
            "[2026-11-28 09:41:16,420] [INFO] [config.py:678:print]   data_efficiency_config ....... {'enabled': "
            "False, 'seed': 1234, 'data_sampling': {'enabled': False, 'num_epochs': 1000, 'num_workers': 0, 'pin_"
            "memory': False, 'curriculum_learning': {'enabled': False}, 'dynamic_batching': {'enabled': False, 'l"
            "r_scaling_method': 'linear', 'min_batch_size': 1, 'max_batch_size': None, 'sequence_picking_order': "
            "'dataloader', 'verbose': False}}, 'data_routing': {'enabled': False, 'random_ltd': {'enabled': False"
            ", 'layer_token_lr_schedule': {'enabled': False}}}}")
    assert mask_text(line) == line
