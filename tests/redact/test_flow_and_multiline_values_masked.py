"""A config's secret printed in YAML's other forms is masked: in a flow mapping (`hub: {token: v}`), and over several
lines (a block, `password: |`, or a quoted string yaml.dump continues on the next lines). What is around it stays.

How each text was made (offline, PyYAML 6.0, omegaconf 2.4): `yaml.safe_dump` of the configs below, with
`default_flow_style=None` (a mapping of scalars in flow style, PyYAML's default before 5.1) and `True`, with the
default style and with `default_style="|"`; `OmegaConf.to_yaml` of the same config (what a Hydra job logs at start).
"""

from __future__ import annotations

import pytest

from orchestrator.redact import MASK, PrivateKeyLines, mask_text

FLOW = "hub: {repo: org/model, token: abc123xyz}\nwandb: {api_key: s3cr3tvalue, project: llm}\n"
ALL_FLOW = "{db: {password: correct horse, user: u}}\n"
QUOTED_ON = """db:
  host: h
  password: 'line one

    line two'
gcp:
  credentials: "{\\"type\\": \\"service_account\\",\\n \\"private_key_id\\": \\"0123abcd\\"\\
    }\\n"
  project: p
"""
BLOCKS = """"db":
  "host": |-
    h
  "password": |-
    line one
    line two
"gcp":
  "credentials": |
    {"type": "service_account",
     "private_key_id": "0123abcd"}
  "project": |-
    p
"""
HAND_WRITTEN = """train:
  lr: 0.1
  password: |
    correct horse

    battery staple
  notes: >-
    a description
    over two lines
callbacks:
- api_key: >-
    abc123
    def456
- name: x
"""


@pytest.mark.parametrize(("text", "shown"), [
    (FLOW, f"hub: {{repo: org/model, token: {MASK}}}\nwandb: {{api_key: {MASK}, project: llm}}\n"),
    (ALL_FLOW, f"{{db: {{password: {MASK}, user: u}}}}\n"),
    ("{api_key: s3cr3tvalue}", f"{{api_key: {MASK}}}"),
    ("x = {api_keys: [a1b2c3, d4e5f6], token: 'two words', n: {password: p1}}",
     f"x = {{api_keys: {MASK}, token: '{MASK}', n: {{password: {MASK}}}}}"),
], ids=["block-style-of-flow-mappings", "all-flow", "alone", "list-quoted-nested"])
def test_a_flow_mappings_secret_entries_are_masked_and_its_others_shown(text, shown):
    assert mask_text(text) == shown


@pytest.mark.parametrize("text", [
    "a, key: b, and c", "{token: {enabled: false}, key: value}", "{max_new_tokens: 256, pad_token: <pad>}",
    "hub: {repo: org/model}"])
def test_what_only_looks_like_a_flow_entry_is_shown(text):
    """Prose with a comma, a nested mapping judged by its own entries, placeholders, counts and special tokens."""
    assert mask_text(text) == text


def hidden_lines(text: str, *numbers: int) -> str:
    """`text` with the lines numbered (from 0) hidden but their indentation, as masking shows them."""
    lines = text.splitlines(keepends=True)
    for number in numbers:
        content = lines[number].lstrip(" ")
        lines[number] = lines[number][:len(lines[number]) - len(content)] + MASK + "\n"
    return "".join(lines)


MULTILINE = {
    "quoted-on": (QUOTED_ON, hidden_lines(QUOTED_ON, 4, 7).replace("'line one", f"'{MASK}").replace(
        'credentials: "{\\"type\\": \\"service_account\\",\\n \\"private_key_id\\": \\"0123abcd\\"\\',
        f'credentials: "{MASK}')),
    "blocks": (BLOCKS, hidden_lines(BLOCKS, 4, 5, 8, 9).replace('"password": |-', f'"password": {MASK}').replace(
        '"credentials": |', f'"credentials": {MASK}')),
    "hand-written": (HAND_WRITTEN, hidden_lines(HAND_WRITTEN, 3, 5, 11, 12)),
}


@pytest.mark.parametrize(("text", "shown"), MULTILINE.values(), ids=MULTILINE.keys())
def test_a_value_over_several_lines_is_hidden_line_by_line_and_what_follows_it_is_shown(text, shown):
    """Before, only its first line was masked: a service account's JSON and a password's other lines were shown."""
    assert mask_text(text) == shown


@pytest.mark.parametrize(("text", "shown"), MULTILINE.values(), ids=MULTILINE.keys())
def test_a_job_printing_it_a_line_at_a_time_shows_the_same(text, shown):
    keys = PrivateKeyLines(mask_text)
    assert [keys.line(line) for line in text.splitlines()] == shown.splitlines()


def test_each_ranks_value_hides_only_that_ranks_lines():
    keys = PrivateKeyLines(mask_text)
    lines = ["[rank0]: password: |", "[rank1]: step 1", "[rank0]:   hunter22", "[rank1]:   indented",
             "[rank0]: lr: 1"]
    assert [keys.line(line) for line in lines] == [
        "[rank0]: password: |", "[rank1]: step 1", f"[rank0]:   {MASK}", "[rank1]:   indented", "[rank0]: lr: 1"]


def test_a_key_printed_under_a_secret_entry_is_hidden_with_it():
    keys = PrivateKeyLines(mask_text)
    lines = ["private_key: |", "  -----BEGIN RSA PRIVATE KEY-----", "  MIIEowIBAAKCAQEA",
             "  -----END RSA PRIVATE KEY-----", "user: u"]
    assert [keys.line(line) for line in lines] == ["private_key: |", *[f"  {MASK}"] * 3, "user: u"]
    assert keys.end() == []

