"""Keeps secrets out of everything smtrain prints: plans, logs, errors. The one masking mechanism.

Documents (plans, requests, specs): only the name/value maps that users fill are masked (environment,
hyperparameters, tags), by the name of each entry at any depth (`creds: {private: v}`), and inside the JSON text
the request carries for a hyperparameter: the API's own field names such as `KmsKeyId` or a tag's `Key` are
structure, not secrets. Free text (a failure reason, a log line, a command line, an AWS error, an error's fix
hint), on this machine and from the cloud alike: `mask_text` with the `secret_values` of the spec or request,
which also masks any value given to a secret-looking flag or variable (`--db-password x`, `HF_TOKEN=x`), a
config's entry printed as a YAML line (`api_key: x`), in a flow mapping (`{token: x}`) or as a block (`password: |`
and the indented lines under it), and a netrc's password. Both also mask what is a credential by
its form whatever its name (`AKIA...`, `hf_...`, `sk-...`, `glpat-...`, `https://u:pw@host`).
A job's output, read a line at a time (a local run's pipes, CloudWatch's events), also goes through
`PrivateKeyLines`: a PEM private key printed over many lines is hidden whole, and a YAML value that goes on over
the lines below a secret name's entry line by line (`SecretBlockLines`), which no one line's masking can do.
Free text is read both as it is and without the marks that show an invisible character (`<U+200B>`, see
`SHOWN_CHARACTER`): such a character written inside a secret does not split it out of sight.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

Shown = TypeVar("Shown", bound=type)

# TOKEN, but not a tokenizer's name (`tokenizer_name`, TOKENIZERS_PARALLELISM): the transformers examples take one
# as an argument and Hugging Face jobs set that variable, and masking them hid a model path and every "false". Nor a
# tokenizer's special tokens (`pad_token: "<pad>"`, `sep_token: [SEP]`, `additional_special_tokens: [...]`), which
# every tokenizer config and transformers' logs print: text of a vocabulary, never a credential.
_SECRET_PARTS = (r"KEY|(?<!(?:pad|eos|bos|unk|sep|cls)[_-])(?<!mask[_-])(?<!special[_-])TOKEN(?!IZ)"
                 r"|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE")
SECRET_NAME = re.compile(_SECRET_PARTS, re.IGNORECASE)
MASK = "****"
MIN_MASKED_LENGTH = 4
NO_SECRET_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})
"""Values that hold no secret under any name: a flag's `true` (or `no`, as YAML 1.1 and configparser spell a
boolean), an unset `None` (transformers' TrainingArguments prints `hub_token=None`,
`average_tokens_across_devices=True` and `include_num_input_tokens_seen=no`). Masked, they would hide the setting
and, as known values, every "false" of a job's log."""
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,64}>|value", re.IGNORECASE)
"""A value that stands for one: in angle brackets (transformers' TrainingArguments prints `hub_token=<HUB_TOKEN>`
for a token it holds, a help text `--api-key=<key>`) or the word itself (a warning's "use --key=value")."""
_MODEL_SENSES = re.compile(r"TOKENS|TOKEN[_-]?(?:IDS?|IDX|INDEX)|KEY[_-]?(?:VALUE|HEADS?)", re.IGNORECASE)
"""TOKEN and KEY as a model's settings use them: text tokens counted (`max_new_tokens`, DeepSpeed's
`max_out_tokens`), a token's id (`pad_token_id`), attention keys (`num_key_value_heads`, in most LLM configs)."""
_NUMBER = re.compile(r"[-+]?(?:\d{1,12}(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?", re.IGNORECASE)
"""A number as Python, JSON or a command line writes it; at most 12 digits before its point, so that a long run of
digits (a numeric key) is not one."""
_SECRET_WORD = rf"(?=[\w.-]*?(?:{_SECRET_PARTS}))[\w.-]+"
"""A run of name characters holding a secret-looking part: found by looking ahead once, so a long run that holds
many parts (`keykeykey...`) is read once, not once for each place the part could be."""
# A value given to a secret-looking flag or variable: `--api_key abc`, `--db-password=abc`, `HF_TOKEN=abc`.
# Only flags take a value after a space: prose such as "the key was not found" stays as it is.
# The credentials-file and INI form puts spaces around `=` (`aws_secret_access_key = abc`); `==` is a comparison.
# A quoted name with `:` is a mapping's entry: JSON, a dict's repr (boto3's debug line `'X-Amz-Security-Token':
# b'...'`, DeepSpeed's config `"api_key": "..."`); a nested mapping or list there (DeepSpeed's
# `'layer_token_lr_schedule': {'enabled': False}`) is judged by its own entries. The value may be quoted
# (`export WANDB_API_KEY="..."`, a pydantic repr's `api_key='...'`): the quote stays, what it holds is masked.
# A value ends before the punctuation that follows it in prose (`--api-key x; train.py takes ...`) or closes an
# argparse usage's group (`[--hub_token HUB_TOKEN]`); a placeholder in angle brackets goes whole (`<your token>`).
# A variable's name starts only where a run of name characters does (`(?<![\w.-])`): a start at each dot inside
# the run would scan to its end again, which took minutes on one line of dots (`print(".", end="")` each step).
_SECRET_ASSIGNMENT = re.compile(
    rf"(?P<name>(?<![\w-])--?{_SECRET_WORD}(?:=|\s+(?!-))|(?<![\w.-]){_SECRET_WORD}[ \t]*=(?!=)[ \t]*"
    rf"|(?P<quote>[\"']){_SECRET_WORD}(?P=quote)[ \t]*:[ \t]*b?(?![{{\[]))"
    rf"(?P<opening>[\"']?)(?P<value><[^<>\n]{{1,64}}>|[^\s\"'=](?:[^\s\"']*[^\s\"',;.)\]])?)", re.IGNORECASE)
# A value that is a credential whatever its name: an AWS access key ID, an AWS session token (STS's begin with
# these two prefixes; boto3's debug lines print it in the request it signs), a GitHub or Hugging Face token, an
# OpenAI or Anthropic API key (`sk-...`, `sk-proj-...`, `sk-ant-...`), a Slack token (`xoxb-...`) or app-level
# token (`xapp-1-...`), a GitLab personal access token (`glpat-...`, with the dotted suffix of its routable form), a
# PyPI upload token (`pypi-AgEIcHlwaS5vcmc...`: the base64 of its macaroon's location, pypi.org or test.pypi.org), a
# PEM private key (to its END line, else to the end of the line), the password of a URL (`https://user:pw@host`,
# where only the password is masked; its scheme starts where a run of scheme characters does, for the same reason),
# and what an HTTP Authorization header carries after its scheme (`Authorization: Bearer eyJ...`).
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9_])(?:(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,}"
    r"|hf_[A-Za-z0-9]{30,}|(?<!-)sk-[A-Za-z0-9_-]{32,}|xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*"
    r"|pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,})(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9+/])(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9+/]{16,}=*"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|.*)"
    r"|(?P<userinfo>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"']*:)(?P<password>[^\s/@\"']+)(?=@)"
    r"|(?P<scheme>(?i:authorization)[\"']?[ \t]*[:=][ \t]*b?[\"']?(?i:bearer|basic|token)[ \t]+)"
    r"(?P<credential>[^\s\"',]+)")
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")
_RANK_TAG_FORM = r"(?:\[\d+,(?:mpirank:)?\d+(?:,[^\]]*)?\]<std\w+>:|\[rank\d+\]:)"
_RANK_TAG = re.compile(rf"^{_RANK_TAG_FORM}")
"""The tag that starts each line of one rank where a host's ranks share one output: mpirun's `--tag-output`
(`[1,3]<stdout>:`, as the toolkit relabels it `[1,mpirank:3,algo-2]<stdout>:`) and torch.distributed's `[rank3]:`."""
# A config file's entry, printed as a line of its own (after a rank's tag, if any): a YAML mapping's
# `api_key: v`, indented or in a list (`- token: v`), as OmegaConf.to_yaml and yaml.dump print a job's config (Hydra
# jobs log it at start), or `.pypirc`'s `password: v`. The value is the rest of the line (a YAML scalar may hold
# spaces; its quotes stay; a flow mapping or list there, `{user: u, password: v}`, goes whole: its entries have no
# quotes to be judged by). Not an entry: a dotted name (huggingface_hub's `special_tokens_map.json: 100%|...`
# download bar), an exception's name (`KeyError: 'input_ids'`, a traceback's last line), an interpolation with
# no default (`${oc.env:HF_TOKEN}`, as Hydra prints the config: it names where the value comes from), and a block
# scalar's indicator (`password: |`: its value is the lines under it, which `SecretBlockLines` hides).
_BLOCK_INDICATOR = r"[|>][-+1-9]*[ \t]*(?:#[^\n]*)?$"
_SECRET_ENTRY_LINE = re.compile(
    rf"(?P<name>^{_RANK_TAG_FORM}?[ \t]*(?:-[ \t]+)*(?=[\w-]*?(?:{_SECRET_PARTS}))[\w-]+"
    r"(?<!error)(?<!exception)(?<!warning):[ \t]+[\"']?)"
    rf"(?P<value>(?!\$\{{[\w.:-]+\}}[\"']?[ \t]*$|{_BLOCK_INDICATOR})[^\s\"'#](?:[^\n]*[^\s\"'])?)",
    re.IGNORECASE | re.MULTILINE)
_MULTILINE_SECRET_ENTRY = re.compile(
    rf"^{_RANK_TAG_FORM}?(?P<indent>[ \t]*(?:-[ \t]+)*)[\"']?(?=[\w-]*?(?:{_SECRET_PARTS}))[\w-]+[\"']?:[ \t]+"
    rf"(?:{_BLOCK_INDICATOR}|'(?:[^'\n]|'')*$|\"(?:[^\"\\\n]|\\.)*\\?$)", re.IGNORECASE | re.MULTILINE)
"""A YAML entry under a secret-looking name whose value goes on below it: a block (`password: |`, `credentials: >-`,
as users write a service account's JSON or a key into a config) or a quoted string left open (`password: 'line one`,
as yaml.dump and OmegaConf.to_yaml print a string of many lines). The lines indented under it are the value."""
_ENTRY_COLON = re.compile(r":[ \t]")
"""What every such entry holds after its tag: looked for first, as its name's lookahead costs about 10 ms on a
64 KiB line (a long line's piece) and a line without it cannot be one."""
# A flow mapping's entry under a secret-looking name (`hub: {token: abc}`, `{api_key: abc, user: u}`), as YAML's
# flow style and Python-like logs print a mapping whose names have no quotes (quoted ones: `_SECRET_ASSIGNMENT`).
# Read only from the first `{` of a line to its last `}` (`_FLOW_PART`, found from the line's start: one scan a
# line), so prose's "a, key: b" stays as it is. The value ends at the entry's `,` or `}`; a flow list
# (`{api_keys: [a, b]}`) goes whole, a nested mapping is judged by its own entries, a quoted value keeps its quotes.
_FLOW_PART = re.compile(r"^(?P<before>[^\n{]*)(?P<flow>\{[^\n]*\})", re.MULTILINE)
_FLOW_ENTRY = re.compile(
    rf"(?P<name>(?<=[{{,])[ \t]*{_SECRET_WORD}[ \t]*:[ \t]+)(?P<opening>[\"']?)"
    r"(?P<value>(?<=[\"'])[^\"'\n]+|\[[^\[\]\n]*\]|[^\s,\[\]{}\"'](?:[^,\[\]{}\"'\n]*[^\s,\[\]{}\"'])?)",
    re.IGNORECASE)
# A netrc's password, where its keywords say it is one: `machine api.wandb.ai login user password v` (netrc's
# one-line form, curl's and pip's docs) and `  password v` alone on its line (the form wandb login writes).
_NETRC_PASSWORD = re.compile(
    rf"(?P<name>(?<![\w-])login[ \t]+\S+[ \t]+password[ \t]+|^{_RANK_TAG_FORM}?[ \t]*password[ \t]+(?=\S+[ \t]*$))"
    r"(?P<value>\S+)", re.MULTILINE)
SHOWN_CHARACTER = re.compile(r"<U\+[0-9A-F]{4,6}>")
"""An invisible or bidirectional character as a job's text shows it (observing/plain_text.py writes `<U+200B>`
where the job wrote a zero-width space, `<U+E0041>` for a tag character beyond U+FFFF). `mask_text` hides what it
finds in a text read with these marks and what it finds read without them: a secret the job split with one
(`hunt<U+200B>er22`) is still one secret, and a mark that glues two words (`run<U+200B>--api-key X`) does not hide
a flag's value either."""
_HIDDEN = "\x00"
"""What `mask_text` writes for each character it hides while it reads through marks: plain text holds no NUL."""
MAX_PRIVATE_KEY_LINES = 256
"""The most lines a PEM private key takes, its BEGIN and END lines included: RSA-16384, the largest in use, takes
about 200 (64 base64 characters a line), RSA-4096 about 50, an Ed25519 key 7. A BEGIN line whose END has not come
within this many lines of the same stream is no key (a script printing the marker alone, a key cut off): the lines
so far stay hidden, the marker says so, and masking goes back to line by line."""
MIN_MACHINE_SECRET_LENGTH = 8
"""A secret-looking variable of this machine's environment (which every job inherits) is masked when its value is at
least this long: AWS keys and tokens are, while `USE_KEYRING=true` would mask every "true"."""
_USER_MAPS = frozenset({"environment", "Environment", "hyperparameters", "HyperParameters", "StaticHyperParameters",
                        "tags"})
_TAG_LISTS = frozenset({"Tags", "tags"})
_RANGE_LISTS = frozenset({"CategoricalParameterRanges", "ContinuousParameterRanges", "IntegerParameterRanges"})
"""A tuning request's ranges: `{Name, Values}` (or MinValue, MaxValue) per tuned hyperparameter."""
_RANGE_MAPS = frozenset({"parameters"})
"""A tuning spec's ranges: name -> {type, values} (or min, max)."""


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def holds_no_secret(value: Any, name: str = "") -> bool:
    """A boolean or null, as a value or as text (`True`, `"false"`, `null`): no secret whatever its name. A number
    under a name that is secret-looking only for its text tokens or attention keys (`max_new_tokens=256`,
    `--num_key_value_heads 8`): a count, an id or a size. Masked, `max_tokens_per_batch: 4096` hid every "4096" of
    the job's log; a PIN under `pin_secret` or `api_key` stays masked. A placeholder (`<HUB_TOKEN>`, `value`) or
    the name itself in capitals, as argparse's usage and help write a flag's value (`[--hub_token HUB_TOKEN]`): it
    says what goes there, and hides nothing."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and (
            value.lower() in NO_SECRET_WORDS or _PLACEHOLDER.fullmatch(value) or value == _metavar(name))):
        return True
    return _NUMBER.fullmatch(str(value)) is not None and not is_secret_name(_MODEL_SENSES.sub("", name))


def _metavar(name: str) -> str:
    """What argparse writes for the value of the flag `name` (`--api-key ` -> API_KEY)."""
    return name.strip().rstrip("=").strip().lstrip("-").replace("-", "_").upper()


def secret_values(*mappings: Mapping[str, Any]) -> frozenset[str]:
    """The values of the secret-looking names in these maps (environment, hyperparameters, tags), as text.

    Names are looked for at every depth (`creds: {private: v}`); under a secret-looking name every value counts,
    each item of a list included (`api_keys: [a, b]`), and so does the whole in its JSON form, as the container
    receives it. A value that is JSON text (the request's hyperparameters) counts encoded and decoded. Booleans
    and nulls are left out: `use_token: true` holds no secret, and masking every "True" would garble the text.
    """
    found: set[str] = set()
    for mapping in mappings:
        _collect_secrets(mapping, under="", found=found)
    return frozenset(found)


def mask_patterns(text: str) -> str:
    """`text` with every value that is a credential by its form alone masked, whatever it is called: `AKIA...`,
    `ghp_...`, `hf_...`, a PEM private key, a URL's password."""
    return _masked_patterns(text, _as_mask)


def _masked_patterns(text: str, hide: Callable[[str], str]) -> str:
    return _SECRET_VALUE.sub(lambda match: match.group(0)[:match.start(_secret_part(match)) - match.start()]
                             + hide(match.group(_secret_part(match))), text)


def _secret_part(match: re.Match[str]) -> int | str:
    """Which group of a `_SECRET_VALUE` match is the secret: a URL's password, an Authorization header's
    credential, else all of it."""
    return "password" if match.group("userinfo") else "credential" if match.group("scheme") else 0


def _as_mask(value: str) -> str:
    return MASK


def _as_hidden(value: str) -> str:
    """A hidden value as long as it was, so that what is hidden keeps its place in the text."""
    return _HIDDEN * len(value)


class SecretBlockLines:
    """The lines of one text or stream, where a YAML value under a secret-looking name goes on over the lines below
    its entry (`password: |`, `password: 'line one`: `_MULTILINE_SECRET_ENTRY`): each of those lines hidden but its
    indentation, a blank line kept, and the first line indented no deeper than the entry's name ends the value. A
    line alone cannot say it belongs to such a value. Ranks that share an output are followed apart by their tag
    (`_RANK_TAG`), as in `PrivateKeyLines`. Not thread-safe: one per reading thread."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}
        """By rank tag: the column of the name whose value is open (its indentation, a list's `- ` included)."""

    def line(self, text: str, hide: Callable[[str], str] = _as_mask) -> str | None:
        """`text` hidden but its tag, indentation and line break when it belongs to an open value; else None (the
        line is left to masking, and opens a value when it is such an entry)."""
        tag = match.group(0) if (match := _RANK_TAG.match(text)) else ""
        if tag in self._open:
            body = text[len(tag):]
            content = body.lstrip(" \t")
            if not content.strip():
                return text
            if len(body) - len(content) > self._open[tag]:
                value = content.rstrip("\r\n")
                return text[:len(text) - len(content)] + hide(value) + content[len(value):]
            del self._open[tag]
        if _ENTRY_COLON.search(text, len(tag)) and (entry := _MULTILINE_SECRET_ENTRY.match(text)):
            self._open[tag] = len(entry.group("indent"))
        return None


def _masked_blocks(text: str, hide: Callable[[str], str]) -> str:
    """`text` with the values that go on over several of its lines hidden (`SecretBlockLines`)."""
    if _MULTILINE_SECRET_ENTRY.search(text) is None:  # most text has none: no split
        return text
    blocks = SecretBlockLines()
    return "".join(line if (hidden := blocks.line(line, hide)) is None else hidden
                   for line in text.splitlines(keepends=True))


class PrivateKeyLines:
    """One stream of output lines (a host's pipe, a CloudWatch stream), each line masked by `mask`, and each PEM
    private key printed over several lines (`-----BEGIN ... PRIVATE KEY-----`, base64 lines, `-----END ...`)
    replaced whole by one line: line-by-line masking alone would hide its BEGIN line and show its body. The lines of
    a YAML value under a secret-looking name that goes on below its entry (`password: |`) are hidden one by one
    (`SecretBlockLines`), a key among them too.

    A key's lines are held back until its END line, then given as one marker line (what came before BEGIN on
    its line, then `**** (a private key: N lines hidden)`). Ranks that share a host's output are followed apart by
    their tag (`_RANK_TAG`): rank 3's key hides rank 3's lines only. Not thread-safe: one per reading thread.
    """

    def __init__(self, mask: Callable[[str], str]) -> None:
        self._mask = mask
        self._open: dict[str, tuple[str, int]] = {}
        """By rank tag: the masked text before BEGIN on its line, and the key's lines so far."""
        self._blocks = SecretBlockLines()

    def line(self, text: str) -> str | None:
        """`text` as it may be shown: masked; None while it belongs to a key being hidden; the key's marker at
        its END line (or at the MAX_PRIVATE_KEY_LINES-th line, when END never came)."""
        tag = match.group(0) if (match := _RANK_TAG.match(text)) else ""
        if tag not in self._open:
            hidden = self._blocks.line(text)
            return self._outside_key(tag, text) if hidden is None else hidden
        before, count = self._open.pop(tag)
        count += 1
        if end := _KEY_END.search(text):
            after = self._outside_key(tag, text[end.end():])
            return f"{before}{MASK} (a private key: {count} lines hidden){after or ''}"
        if _KEY_END.search(SHOWN_CHARACTER.sub("", text)):  # an END line with a shown character in it: all hidden
            return f"{before}{MASK} (a private key: {count} lines hidden)"
        if count >= MAX_PRIVATE_KEY_LINES:
            return (f"{before}{MASK} ({count} lines hidden from a private key's BEGIN line: no END line within "
                    f"{MAX_PRIVATE_KEY_LINES} lines, so masking went back to line by line)")
        self._open[tag] = (before, count)
        return None

    def end(self) -> list[str]:
        """At the end of the stream: one marker line for each key whose END line never came."""
        ended = [f"{before}{MASK} ({count} lines hidden from a private key's BEGIN line: the output ended before "
                 "its END line)" for before, count in self._open.values()]
        self._open.clear()
        return ended

    def _outside_key(self, tag: str, text: str) -> str | None:
        """`text` masked, or None when a key starts on it and goes on past it (then its lines are followed)."""
        begins = list(_KEY_BEGIN.finditer(text))
        if not begins:
            read = SHOWN_CHARACTER.sub("", text)  # a BEGIN line with a shown character (`<U+200B>`) inside it
            if (begun := list(_KEY_BEGIN.finditer(read))) and not _KEY_END.search(read, begun[-1].end()):
                self._open[tag] = ("", 1)  # what came before BEGIN goes too: the line cannot be cut apart here
                return None
            return self._mask(text)
        if _KEY_END.search(text, begins[-1].end()):
            return self._mask(text)  # a key whole on one line is one of mask_patterns' forms
        self._open[tag] = (self._mask(text[:begins[-1].start()]), 1)
        return None


def machine_secrets(environ: Mapping[str, str]) -> frozenset[str]:
    """The values of this machine's secret-looking environment variables (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
    HF_TOKEN...): a job inherits them and may print them, so its output is masked for them as for the spec's."""
    return frozenset(value for name, value in environ.items() if is_secret_name(name)
                     and len(value) >= MIN_MACHINE_SECRET_LENGTH and not holds_no_secret(value, name))


def _collect_secrets(value: Any, under: str, found: set[str]) -> None:
    """Adds to `found` the secrets of `value`; `under` is the nearest secret-looking name above it, else "". A list
    or mapping counts whole (its JSON) when something in it is secret: `eos_token_id: [1, 2]` holds none."""
    if isinstance(value, (Mapping, list, tuple)):
        inner: set[str] = set()
        for name, item in (value.items() if isinstance(value, Mapping) else ((under, item) for item in value)):
            _collect_secrets(item, str(name) if is_secret_name(str(name)) else under, inner)
        if under and inner:
            inner.add(json.dumps(value))
        found.update(inner)
    elif isinstance(value, str):
        decoded = _json_container(value)
        if decoded is not None:
            _collect_secrets(decoded, under, found)
        found.update(match.group(_secret_part(match)) for match in _SECRET_VALUE.finditer(value))
        if under and value and not holds_no_secret(value, under):
            found.add(value)
            if isinstance(decoded := _json_scalar(value), str) and decoded:
                found.add(decoded)
    elif under and not holds_no_secret(value, under):
        found.add(str(value))


def _json_container(text: str) -> Any:
    """The list or mapping a JSON text holds (a request's hyperparameter value), else None."""
    if not text.startswith(("[", "{")):
        return None
    try:
        decoded = json.loads(text)
    except ValueError:
        return None
    return decoded if isinstance(decoded, (list, dict)) else None


def _json_scalar(text: str) -> Any:
    """The string a JSON-encoded hyperparameter value holds (`"hunter22"` -> hunter22), else None."""
    if not text.startswith('"'):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret value in it masked: the known values wherever they occur, and any value given to
    a secret-looking flag or assignment (`--api_key abc`, `--api_key=abc`, `API_KEY=abc`).

    Known values shorter than MIN_MASKED_LENGTH are masked only in those flag positions: masking every "42" in a
    traceback would hide more than it protects.
    """
    if SHOWN_CHARACTER.search(text) is None:
        return _masked(text, secrets, _as_mask)
    return _masked_through_marks(text, secrets)


def _masked(text: str, secrets: Iterable[str], hide: Callable[[str], str]) -> str:
    hidden_value = functools.partial(_hidden_value, hide)
    text = _masked_patterns(_masked_values(_masked_blocks(text, hide), secrets, hide), hide)
    text = _SECRET_ENTRY_LINE.sub(hidden_value, _SECRET_ASSIGNMENT.sub(hidden_value, text))
    text = _FLOW_PART.sub(lambda line: line["before"] + _FLOW_ENTRY.sub(hidden_value, line["flow"]), text)
    return _NETRC_PASSWORD.sub(hidden_value, text) if "password" in text else text  # most text has none: no scan


def _hidden_value(hide: Callable[[str], str], match: re.Match[str]) -> str:
    """A named value's match with its `value` group hidden, and all before it kept (the name, an opening quote)."""
    if holds_no_secret(match.group("value"), match.group("name")):
        return match.group(0)
    return match.group(0)[:match.start("value") - match.start()] + hide(match.group("value"))


def _masked_through_marks(text: str, secrets: Iterable[str]) -> str:
    """`text`, holding marks of invisible characters, with what masking finds in it and in it without the marks
    hidden: each run of hidden characters is one MASK, and marks between two hidden characters go with them."""
    secrets = tuple(secrets)
    marks = list(SHOWN_CHARACTER.finditer(text))
    in_mark = [False] * len(text)
    for mark in marks:
        in_mark[mark.start():mark.end()] = [True] * (mark.end() - mark.start())
    read = [index for index, marked in enumerate(in_mark) if not marked]  # the text without the marks, by place
    hidden = [character == _HIDDEN for character in _masked(text, secrets, _as_hidden)]
    for index, character in zip(read, _masked("".join(text[index] for index in read), secrets, _as_hidden),
                                strict=True):
        hidden[index] = hidden[index] or character == _HIDDEN
    for start, end in _runs(marks):
        if 0 < start and end < len(text) and hidden[start - 1] and hidden[end]:
            hidden[start:end] = [True] * (end - start)
    shown = [MASK if hidden[index] else character for index, character in enumerate(text)
             if not hidden[index] or index == 0 or not hidden[index - 1]]
    return "".join(shown)


def _runs(marks: list[re.Match[str]]) -> list[tuple[int, int]]:
    """Where marks follow each other without text between them, the run they make: (start, end)."""
    runs: list[tuple[int, int]] = []
    for mark in marks:
        if runs and runs[-1][1] == mark.start():
            runs[-1] = (runs[-1][0], mark.end())
        else:
            runs.append((mark.start(), mark.end()))
    return runs


def mask_values(text: str, secrets: Iterable[str]) -> str:
    """`text` with the known secret values masked (those of at least MIN_MASKED_LENGTH), nothing else: for
    structured text such as a repr, whose `key=None` is no secret."""
    return _masked_values(text, secrets, _as_mask)


def _masked_values(text: str, secrets: Iterable[str], hide: Callable[[str], str]) -> str:
    for value in sorted((value for value in secrets if len(value) >= MIN_MASKED_LENGTH), key=len, reverse=True):
        text = text.replace(value, hide(value))
    return text


def masks_its_repr(secrets_of: Callable[[Any], Iterable[str]]) -> Callable[[Shown], Shown]:
    """A class decorator: the class's repr and str (what a notebook shows for an object a cell ends with) with
    `secrets_of(obj)` masked, in the escaped form repr gives a value (quotes, backslashes) as well; its
    `_repr_html_` where it has one (what Jupyter shows instead of the repr), in HTML's escaped form; and its
    `__rich_repr__` where it has one (a pydantic model's), which rich's notebook display (`%load_ext rich`),
    `rich.print` and `rich.pretty` read field by field instead of the repr."""

    def decorate(cls: Shown) -> Shown:
        shown_repr, shown_str = cls.__repr__, cls.__str__
        shown_rich, shown_html = getattr(cls, "__rich_repr__", None), getattr(cls, "_repr_html_", None)

        def masked(text: str, obj: Any, escaped: Callable[[str], str]) -> str:
            secrets = set(secrets_of(obj))
            return mask_values(text, secrets | {escaped(value) for value in secrets})

        cls.__repr__ = lambda self: masked(shown_repr(self), self, _repr_escaped)
        if shown_str is not object.__str__:  # object's str is the repr, masked above
            cls.__str__ = lambda self: masked(shown_str(self), self, _repr_escaped)
        if shown_html is not None:
            cls._repr_html_ = lambda self: masked(shown_html(self), self, html.escape)
        if shown_rich is not None:
            def rich_masked(self: Any) -> Iterable[Any]:
                secrets = {value for value in secrets_of(self) if len(value) >= MIN_MASKED_LENGTH}
                for item in shown_rich(self):  # a value, or (name, value) and maybe a default after
                    yield (item[0], _masked_item(item[1], secrets), *item[2:]) if isinstance(item, tuple) else (
                        _masked_item(item, secrets))

            cls.__rich_repr__ = rich_masked
        return cls

    return decorate


def _repr_escaped(value: str) -> str:
    """A value as repr writes it inside its quotes (quotes and backslashes escaped)."""
    return repr(value)[1:-1]


def _masked_item(value: Any, secrets: set[str]) -> Any:
    """A field's value as rich shows it, the known secret values masked in its text, items and keys."""
    if isinstance(value, str):
        return mask_values(value, secrets)
    if isinstance(value, Mapping):
        return {_masked_item(key, secrets): _masked_item(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_masked_item(item, secrets) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return MASK if not isinstance(value, bool) and str(value) in secrets else value


def redact_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping with the values of secret-looking names masked, at any depth (and inside JSON text)."""
    return {key: redact_value(str(key), value) for key, value in values.items()}


def redact_value(name: str, value: Any) -> Any:
    """One user entry as it may be shown: masked under a secret-looking name, its secret parts masked otherwise."""
    return MASK if is_secret_name(name) and not holds_no_secret(value, name) else _redact_value(value)


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact_mapping(value)
    if isinstance(value, list):
        return [_redact_value(item) for item in value]
    if isinstance(value, str) and (decoded := _json_container(value)) is not None:
        redacted = _redact_value(decoded)
        return value if redacted == decoded else json.dumps(redacted)
    return mask_patterns(value) if isinstance(value, str) else value


def redact(document: Any) -> Any:
    """A copy of a plan, spec or request with the secret-looking entries of its user maps masked."""
    if isinstance(document, dict):
        return {key: _redact_field(key, value) for key, value in document.items()}
    if isinstance(document, list):
        return [redact(item) for item in document]
    return mask_patterns(document) if isinstance(document, str) else document


def _redact_field(name: str, value: Any) -> Any:
    if name in _USER_MAPS and isinstance(value, dict):
        return redact_mapping(value)
    if name in _RANGE_LISTS and isinstance(value, list):
        return [{key: (item if key == "Name" else MASK) for key, item in entry.items()}
                if isinstance(entry, dict) and is_secret_name(str(entry.get("Name", ""))) else redact(entry)
                for entry in value]
    if name in _RANGE_MAPS and isinstance(value, dict):
        return {key: ({part: (item if part == "type" else MASK) for part, item in entry.items()}
                      if is_secret_name(str(key)) and isinstance(entry, dict) else redact(entry))
                for key, entry in value.items()}
    if name in _TAG_LISTS and isinstance(value, list):
        return [{**tag, "Value": MASK} if isinstance(tag, dict) and is_secret_name(str(tag.get("Key", "")))
                else redact(tag) for tag in value]
    return redact(value)
