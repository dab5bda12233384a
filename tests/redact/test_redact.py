import time

from orchestrator.redact import MASK, mask_patterns, mask_text, redact, secret_values

QUADRATIC_CPU_SECONDS = 10
"""A bound on this process's own CPU time for the long-line tests below: a linear read of their lines takes
milliseconds, a quadratic one a minute or more, so a slow or loaded machine never decides the outcome."""


def test_redact_masks_secret_looking_entries_of_user_maps():
    document = {
        "Environment": {"WANDB_API_KEY": "abc", "NCCL_DEBUG": "WARN", "DB_PASSWORD": "pw"},
        "HyperParameters": {"hf-token": "\"t\"", "epochs": "3"},
        "Tags": [{"Key": "team", "Value": "ml"}, {"Key": "deploy-token", "Value": "t0k"}],
        "spec": {"environment": {"AWS_SECRET_ACCESS_KEY": "s"}, "tags": {"team": "ml", "api_key": "k"}},
    }
    assert redact(document) == {
        "Environment": {"WANDB_API_KEY": MASK, "NCCL_DEBUG": "WARN", "DB_PASSWORD": MASK},
        "HyperParameters": {"hf-token": MASK, "epochs": "3"},
        "Tags": [{"Key": "team", "Value": "ml"}, {"Key": "deploy-token", "Value": MASK}],
        "spec": {"environment": {"AWS_SECRET_ACCESS_KEY": MASK}, "tags": {"team": "ml", "api_key": MASK}},
    }


def test_redact_leaves_api_field_names_alone():
    request = {"OutputDataConfig": {"KmsKeyId": "arn:aws:kms:us-east-1:1:key/abc", "S3OutputPath": "s3://b/"},
               "ResourceConfig": {"VolumeKmsKeyId": "k"}}
    assert redact(request) == request


def test_secret_values_are_the_values_of_secret_looking_names_as_text():
    values = secret_values({"api_key": "hunter22", "DB_PASSWORD": 31415926535, "use_token": True, "token": None,
                            "epochs": 3, "aws-keys": ["a", "b"]}, {"HF_TOKEN": "hf_abc"})
    # a list counts whole and item by item (mask_text leaves items this short alone outside flag positions)
    assert values == {"hunter22", "31415926535", '["a", "b"]', "a", "b", "hf_abc"}


def test_mask_text_masks_known_values_and_secret_flags():
    secrets = secret_values({"api_key": "hunter22", "pin_secret": "42"})
    reason = ('algo-1 exited with code 1: ValueError: bad key hunter22\nCommand "/usr/bin/python train.py '
              '--api_key hunter22 --pin_secret 42 --epochs 3 --db-password=pw HF_TOKEN=t0k"')
    assert mask_text(reason, secrets) == (
        f'algo-1 exited with code 1: ValueError: bad key {MASK}\nCommand "/usr/bin/python train.py '
        f'--api_key {MASK} --pin_secret {MASK} --epochs 3 --db-password={MASK} HF_TOKEN={MASK}"')


def test_a_masked_value_keeps_the_punctuation_that_follows_it():
    text = "unrecognized arguments: --api-key x; train.py takes --lr (--db-password=pw2) HF_TOKEN=abc.def, done"
    assert mask_text(text) == (f"unrecognized arguments: --api-key {MASK}; train.py takes --lr "
                               f"(--db-password={MASK}) HF_TOKEN={MASK}, done")


def test_mask_text_leaves_prose_and_short_values_elsewhere_alone():
    secrets = secret_values({"pin_secret": "42"})
    text = "KeyError: 'the key was not found' after 42 steps; --monkey-flag --epochs 3"
    assert mask_text(text, secrets) == text


def test_a_long_line_of_dots_is_masked_at_once_and_what_follows_it_still_is():
    """A script that prints a dot a step (`print(".", end="", flush=True)`) writes one line of up to 256 KB (a
    CloudWatch event's limit). Before, each dot started a new scan to the line's end: 20,000 dots took half a
    minute and a full event hours, so `smtrain status`/`logs` and a local run's output hung on it. (The bound is
    hundreds of times what a linear read costs and a fraction of a quadratic one's: no machine's speed decides it.)"""
    started = time.process_time()
    masked = mask_text("." * 20_000 + " config.api_key=abc123") + mask_patterns("a." * 60_000 + " x.https://u:pw@h")
    assert time.process_time() - started < QUADRATIC_CPU_SECONDS
    assert masked.endswith(f"config.api_key={MASK}" + "a." * 60_000 + f" x.https://u:{MASK}@h")


def test_a_long_word_made_of_secret_looking_parts_is_read_at_once():
    """`--keykeykey...`: each place a part of a secret-looking name could be started a scan to the word's end, so
    a 60,000-character word took about a minute (a flag, a quoted name and a bare name alike; a YAML entry's name
    is read the same way)."""
    word = "key" * 20_000
    forms = ("--{} {}", '"{}": "{}"', "{}={}", "{}: {}")
    started = time.process_time()
    masked = [mask_text(form.format(word, "abc123")) for form in forms]
    assert time.process_time() - started < QUADRATIC_CPU_SECONDS
    assert masked == [form.format(word, MASK) for form in forms]


def test_long_lines_of_braces_quotes_and_entries_are_read_at_once():
    """A flow mapping's entries, a quoted value left open and a value over several lines (`password: |`): were
    each `{`, `,` or quote to start a scan to the line's end, one line of 200,000 `{` (a CloudWatch event holds
    256 KB) would take minutes."""
    lines = ["{" * 200_000 + "token: x", "{" + "key," * 20_000 + "}", "{" + "key: x, " * 10_000 + "}",
             "password: '" + "''" * 30_000, 'password: "' + "\\" * 60_000, "- " * 30_000 + "password: |",
             "password: |\n" * 20_000]
    started = time.process_time()
    masked = [mask_text(line) for line in lines]
    assert time.process_time() - started < QUADRATIC_CPU_SECONDS
    assert masked[2] == "{" + f"key: {MASK}, " * 10_000 + "}"


def test_a_hugging_face_jobs_settings_and_log_are_shown_while_its_token_is_masked():
    """transformers' example scripts take `--tokenizer_name`, Hugging Face jobs set TOKENIZERS_PARALLELISM=false,
    and the Trainer prints its arguments (`hub_token=None`, `average_tokens_across_devices=True`): none of it is a
    secret. Masked, a user lost the tokenizer's path and every "false" of the job's log (torch's "a false
    positive" read "a **** positive")."""
    environment = {"TOKENIZERS_PARALLELISM": "false", "HF_TOKEN": "hf_live_1234"}
    hyperparameters = {"tokenizer_name": "/opt/ml/input/data/model", "use_fast_tokenizer": True,
                       "hub_private_repo": "true", "hub_token": "s3cr3t-t0k"}
    secrets = secret_values(environment, hyperparameters)
    assert secrets == {"hf_live_1234", "s3cr3t-t0k"}
    log = ("average_tokens_across_devices=True,\nhub_token=None,\nWarning: this may be a false positive\n"
           "--tokenizer_name /opt/ml/input/data/model --hub_token s3cr3t-t0k token=hf_live_1234")
    assert mask_text(log, secrets) == (
        "average_tokens_across_devices=True,\nhub_token=None,\nWarning: this may be a false positive\n"
        f"--tokenizer_name /opt/ml/input/data/model --hub_token {MASK} token={MASK}")
    assert redact({"Environment": environment, "HyperParameters": hyperparameters}) == {
        "Environment": {"TOKENIZERS_PARALLELISM": "false", "HF_TOKEN": MASK},
        "HyperParameters": {**hyperparameters, "hub_token": MASK}}
