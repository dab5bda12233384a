"""Masking what a job prints of its configuration and credentials when smtrain does not know the values: a config
printed as YAML, a netrc, and tokens whose prefix says what they are. Their settings are shown, their secrets not.

How each line was made (offline):

- YAML: `print(OmegaConf.to_yaml(cfg))` with omegaconf 2.4 (what a Hydra job does at start) of the config in
  CONFIG below, then `yaml.safe_dump` (PyYAML 6.0) of `{"s3": {"session_token": "12345678", "secret_key": "it's: a
  key"}}`: both printed, copied verbatim. Under torchrun each line may carry its rank's tag (`[rank0]:`).
- netrc: the form wandb's `write_netrc` writes (its own test asserts `"machine localhost\\n  login vanpelt\\n
  password %s\\n"`; wandb is not installed here) and the one-line form of netrc's documentation.
- git: `git remote -v` and `git config --list` (git 2.x) of a clone whose remote is a token's URL.
- what must stay shown: huggingface_hub's download bar, `huggingface_hub.utils.tqdm(total=99,
  desc="special_tokens_map.json", unit="B", unit_scale=True)` updated to 99 and closed (its last frame), and a
  traceback's last line from `python -c "{}['input_ids']"`.
- tokens by prefix: made up in each vendor's published shape (no real token), since no job here may hold one.
"""

from __future__ import annotations

import pytest

from orchestrator.redact import MASK, mask_text, secret_values

WANDB_KEY = "0123456789abcdef0123456789abcdef01234567"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
COMET_KEY = "CmT4pIkEy0123456789abcdef"
OMEGACONF_YAML = f"""trainer:
  max_steps: 1000
  max_new_tokens: 256
  pad_token_id: 0
wandb:
  project: llm
  api_key: {WANDB_KEY}
  use_token: false
hub:
  token: ${{oc.env:HF_TOKEN}}
  hub_token: null
aws:
  secret_access_key: {AWS_SECRET}
db:
  password: correct horse battery
callbacks:
- name: comet
  api_key: {COMET_KEY}
tokenizer_name: gpt2
"""
SAFE_DUMP_YAML = "s3:\n  session_token: '12345678'\n  secret_key: 'it''s: a key'\n"


SHOWN_YAML = (OMEGACONF_YAML.replace(WANDB_KEY, MASK).replace(AWS_SECRET, MASK).replace(COMET_KEY, MASK)
              .replace("password: correct horse battery", f"password: {MASK}"))


def test_a_config_printed_as_yaml_shows_its_settings_and_hides_its_keys_and_passwords():
    """A Hydra job logs its config at start; smtrain knows none of these values (they come from the job's own
    files or its role), so only the entry's name can say it is a secret."""
    assert mask_text(OMEGACONF_YAML) == SHOWN_YAML
    assert mask_text(SAFE_DUMP_YAML) == f"s3:\n  session_token: '{MASK}'\n  secret_key: '{MASK}'\n"


def test_each_ranks_tagged_config_line_is_masked():
    def tagged(text):
        return "".join(f"[rank0]: {line}\n" for line in text.splitlines())

    assert mask_text(tagged(OMEGACONF_YAML)) == tagged(SHOWN_YAML)
    assert mask_text(f"[1,mpirank:0,algo-1]<stdout>:  api_key: {WANDB_KEY}") == (
        f"[1,mpirank:0,algo-1]<stdout>:  api_key: {MASK}")


@pytest.mark.parametrize("line", [
    "special_tokens_map.json: 100%|██████████| 99.0/99.0 [00:00<00:00, 597kB/s] ",
    "KeyError: 'input_ids'",
    "token: ${oc.env:HF_TOKEN}",
    "hub_token: null",
    "  max_new_tokens: 256",
    "tokenizer_name: gpt2",
])
def test_lines_that_only_look_like_a_secret_entry_are_shown(line):
    """A file's name in a download bar, an exception's name, an interpolation that names where the token comes
    from, a null, a count of tokens and a tokenizer's name hold no secret."""
    assert mask_text(line) == line


def test_a_netrc_printed_hides_its_password_and_keeps_its_host():
    wandb_netrc = f"machine api.wandb.ai\n  login user\n  password {WANDB_KEY}\n"
    assert mask_text(wandb_netrc) == f"machine api.wandb.ai\n  login user\n  password {MASK}\n"
    one_line = f"machine api.wandb.ai login user password {WANDB_KEY}"
    assert mask_text(one_line) == f"machine api.wandb.ai login user password {MASK}"
    assert mask_text("password is too short for user alice") == "password is too short for user alice"


TOKENS = {
    "OpenAI, project": "sk-proj-" + "Ab1Cd2Ef3Gh4" * 12,
    "OpenAI, legacy": "sk-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn" + "T3BlbkFJ" + "Op7Qr8St9Uv0Wx1Yz2Ab",
    "Anthropic": "sk-ant-api03-" + "Ab1Cd2Ef3Gh4-_" * 6 + "AA",
    "Slack bot": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "GitHub OAuth": "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "Slack app": "xapp-1-A0123456789-1234567890123-" + "0a1b2c3d4e5f6a7b" * 4,
    "GitLab": "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn",
    "GitLab, routable": "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9" + ".01.0x1abc2de",
    "PyPI": "pypi-AgEIcHlwaS5vcmc" + "CJDAxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZgACKlszLCJmOTk4",
    "TestPyPI": "pypi-AgENdGVzdC5weXBpLm9yZw" + "CJDAxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZgACKlsz",
}


@pytest.mark.parametrize("token", TOKENS.values(), ids=TOKENS.keys())
def test_tokens_are_hidden_by_their_prefix_wherever_they_appear(token):
    for line in (f"client = OpenAI(api_key={token!r})", f"Using {token} for the run", f"[rank3]: {token}",
                 f"SLACK={token}"):
        shown = mask_text(line)
        assert token not in shown and MASK in shown, line
    assert secret_values({"notify": token}) == {token}


@pytest.mark.parametrize("text", ["sk-learn", "task-" + "sk-" + "a" * 40, "disk-" + "A1" * 20, "xoxo-hugs",
                                  "xapp-config", "xapp-1-short", "glpat-short", "glpat-" + "a" * 19, "pypi-server",
                                  "pip install pypi-simple", "pypi-AgEIcHlwaS5vcmc" + "short"])
def test_words_that_start_like_a_token_are_shown(text):
    assert mask_text(text) == text


def test_a_token_in_a_git_remotes_url_is_hidden_as_git_prints_it():
    """Already masked before (a URL's password, a GitHub token's form): kept as they are, with the YAML forms."""
    remotes = ("origin\thttps://x-access-token:plainTok3n0123456789@github.com/org/repo.git (fetch)\n"
               "remote.origin.url=https://x-access-token:plainTok3n0123456789@github.com/org/repo.git\n"
               "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"
               "login(token='hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789')")
    assert mask_text(remotes) == (f"origin\thttps://x-access-token:{MASK}@github.com/org/repo.git (fetch)\n"
                                  f"remote.origin.url=https://x-access-token:{MASK}@github.com/org/repo.git\n"
                                  f"export HF_TOKEN={MASK}\nlogin(token='{MASK}')")
