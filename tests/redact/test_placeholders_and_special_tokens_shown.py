"""What only looks like a secret is shown: a placeholder that stands for a value, a flag's value in a help text and
a tokenizer's special tokens. A real secret under a `*_token` name still is not.

How each line was made (offline, transformers 5.24, PyYAML 6.0, Python's argparse):

- `print(TrainingArguments(output_dir="/opt/ml/model", report_to="none", hub_token="hf_..."))`: transformers prints
  `<HUB_TOKEN>` in place of every `*_token` field it holds;
- a tokenizer, `PreTrainedTokenizerFast(tokenizer_object=..., pad_token="<pad>", eos_token="</s>", ...,
  sep_token="[SEP]", cls_token="[CLS]", additional_special_tokens=["<extra_id_0>"])`: its `save_pretrained`'s
  tokenizer_config.json (transformers 5 names the list `extra_special_tokens`, 4.x `additional_special_tokens`),
  `yaml.safe_dump(tokenizer.special_tokens_map)` (with 4.x's list as a flow sequence after it), and the start of
  the repr a notebook shows of it;
- argparse: `add_argument("--hub_token", help=...)`, `add_argument("--api-key", help=...)`, then `format_help()`.
"""

from __future__ import annotations

import pytest

from orchestrator.redact import MASK, PrivateKeyLines, mask_text, redact, secret_values

HUB_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
TRAINING_ARGUMENTS = "average_tokens_across_devices=True,\nhub_token=<HUB_TOKEN>,\ninclude_num_input_tokens_seen=no,"
TOKENIZER_CONFIG = """{
  "backend": "tokenizers",
  "bos_token": "<s>",
  "cls_token": "[CLS]",
  "eos_token": "</s>",
  "extra_special_tokens": [
    "<extra_id_0>"
  ],
  "mask_token": "<mask>",
  "pad_token": "<pad>",
  "sep_token": "[SEP]",
  "tokenizer_class": "TokenizersBackend",
  "unk_token": "<unk>"
}"""
SPECIAL_TOKENS_YAML = """bos_token: <s>
cls_token: '[CLS]'
eos_token: </s>
mask_token: <mask>
pad_token: <pad>
sep_token: '[SEP]'
unk_token: <unk>
additional_special_tokens: [<extra_id_0>, <extra_id_1>]
"""
TOKENIZER_REPR = ("TokenizersBackend(name_or_path='', vocab_size=9, model_max_length=10000000000000000198846248386"
                  "56, padding_side='right', truncation_side='right', special_tokens={'bos_token': '<s>', "
                  "'eos_token': '</s>', 'unk_token': '<unk>', 'sep_token': '[SEP]', 'pad_token': '<pad>', "
                  "'cls_token': '[CLS]', 'mask_token': '<mask>'}, ")
ARGPARSE_HELP = """usage: train.py [-h] [--hub_token HUB_TOKEN] [--api-key API_KEY]

options:
  -h, --help            show this help message and exit
  --hub_token HUB_TOKEN
                        the token to push with
  --api-key API_KEY     use --api-key=value or API_KEY=value
"""
PROSE = "warning: use --key=value to set it, e.g. --hub-token=<your token>"
SHOWN = {"training-arguments": TRAINING_ARGUMENTS, "tokenizer-config": TOKENIZER_CONFIG,
         "special-tokens-yaml": SPECIAL_TOKENS_YAML, "tokenizer-repr": TOKENIZER_REPR, "argparse-help": ARGPARSE_HELP,
         "prose": PROSE}


@pytest.mark.parametrize("text", SHOWN.values(), ids=SHOWN.keys())
def test_placeholders_special_tokens_and_help_texts_are_shown(text):
    """Masked, a user lost which pad and end-of-text tokens the job trained with (`pad_token: "****"`), read
    `hub_token=****` where transformers had printed a placeholder, and `[--hub_token ****]` in a script's help."""
    assert mask_text(text) == text


def test_a_job_printing_them_line_by_line_shows_them():
    keys = PrivateKeyLines(mask_text)
    lines = [*TOKENIZER_CONFIG.splitlines(), *SPECIAL_TOKENS_YAML.splitlines()]
    assert [keys.line(line) for line in lines] == lines


@pytest.mark.parametrize("line", [f"hub_token: {HUB_TOKEN}", "api_token: xyz123", "--api_token xyz123",
                                  'HUB_TOKEN="xyz123"', "  hub_token: <xyz123", "--api-key=values"])
def test_a_real_value_under_a_token_name_is_still_masked(line):
    assert mask_text(line) != line and MASK in mask_text(line)


def test_a_specs_special_tokens_are_shown_and_no_known_secret():
    """A spec's `pad_token: "<pad>"` was a known secret: every "<pad>" of the job's log read `****`."""
    hyperparameters = {"pad_token": "<pad>", "eos_token": "</s>", "sep_token": "[SEP]", "hub_token": HUB_TOKEN}
    assert secret_values(hyperparameters) == {HUB_TOKEN}
    assert redact({"HyperParameters": hyperparameters}) == {"HyperParameters": {**hyperparameters,
                                                                                "hub_token": MASK}}
    assert mask_text("decoded: <pad> hello </s>", secret_values(hyperparameters)) == "decoded: <pad> hello </s>"
