"""What a training script reads and prints, from its text alone (`smtrain init`): the channels it opens, how it
expects to be launched, its argparse options and the metrics it prints. The script is never run or imported: its
syntax tree is read where it parses, and where it does not (a syntax error, another Python's syntax) the same
facts are read from its text by patterns, the argparse options from their one-line form."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Any

from orchestrator import python_source
from orchestrator.planning.framework_reading import FrameworkReading, parsed_tree, read_frameworks
from orchestrator.redact import holds_no_secret, is_secret_name

_CHANNEL = re.compile(r"SM_CHANNEL_([A-Z0-9_]*[A-Z0-9])\b")
_ALL_CHANNELS = re.compile(r"\bSM_CHANNELS\b|SM_CHANNEL_\{")
_TORCHRUN = re.compile(r"""["'](?:LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)["']|\binit_process_group\b""")
_HOST_RANKS = re.compile(r"\bSM_HOSTS\b|\bSM_CURRENT_HOST\b")
"""A script that ranks itself from SageMaker's host list is launched once per host (mode none), even though it
joins a process group."""
_MPI = re.compile(r"\bmpi4py\b|\bOMPI_COMM_WORLD_(?:RANK|SIZE)\b")
_GPU = re.compile(r"""\.cuda\(|\bcuda\.(?:set_device|current_device)\(|["']cuda(?::\d+)?["']|["']nccl["']"""
                  r"""|\b(?:Trainer|Accelerator|LightningCLI)\(""")
"""CUDA named in the script (`torch.cuda.set_device(hvd.local_rank())` too), or a trainer that takes the host's GPU
on its own (the Hugging Face or Lightning Trainer, Accelerate)."""
_IPYTHON_LINE = re.compile(r"^[ \t]*(?:![^=]|%)", re.MULTILINE)
"""A notebook's shell or magic line (`!pip install ...`, `%time`, `%%capture`), which Python refuses."""
_LIGHTNING_CLI = re.compile(r"\bLightningCLI\(")
_LIGHTNING_CLI_RUNS_NOTHING = re.compile(r"""\brun\s*=\s*False\b|\bargs\s*=\s*\[\s*["'](?:fit|validate|test|predict)""")
"""`LightningCLI(..., run=False)` parses options only, and `args=["fit", ...]` gives the subcommand itself: neither
expects one first on the command line."""
_DATACLASS_PARSER = re.compile(r"\bHfArgumentParser\b")
_DEEPSPEED_OPTIONS = ("deepspeed", "deepspeed_config")
"""The options that name a DeepSpeed config file (the Trainer's `--deepspeed`, DeepSpeed's `--deepspeed_config`)."""
_PRINTED_METRIC = re.compile(r"""(?:(?<![\\\w])|(?<=\\[nrt]))(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<separator>=|: ?)"""
                             r"""(?:\{|%|["']\s*,)""")
"""`loss={loss:.3f}`, `loss: %f`, `"loss=", loss`, `\\tLoss: {:.6f}`: a number printed after its name."""
_METRIC_WORDS = frozenset({"loss", "acc", "accuracy", "perplexity", "ppl", "f1", "auc", "bleu", "rouge", "lr",
                           "epoch"})
"""A printed name is a metric's where one of its `_`-separated words is one of these (`val_loss`, `train_acc`;
not `grad_accum`, `data_dir`), or that holds `learning_rate`."""
_VALIDATION_PREFIXES = ("validation_", "valid_", "val_", "eval_")
_EVALUATION_WORD = re.compile(r"\b(?:test|validation|valid|eval|val|evaluation)\b", re.IGNORECASE)
"""A word on a printed line that makes its unprefixed metrics validation ones: `Test set: Average loss: {:.4f}`."""
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0-9.]*[a-zA-Z]")
"""A value's place in printed text: `{}`, `{loss:.3f}`, `%d`, `%.4f`."""
_COUNT_OF_TOTAL = re.compile(rf"(?:{_PLACEHOLDER.pattern})\s*/\s*(?:{_PLACEHOLDER.pattern})"
                             rf"(?P<percent>\s*\(\s*(?:{_PLACEHOLDER.pattern})\s*%%?\))?")
"""`{}/{}`, `%d/%d`: a count of a total, and the percentage after it where one is printed (`({:.0f}%)`,
`(%.0f%%)`)."""
_WORD = re.compile(r"(?<![\\\w])[A-Za-z]\w*")
"""A printed word, not an escape's letter (`t` of `\\t`)."""
_TRAIN_PREFIX = "train_"
_PRINT_OPENS = re.compile(r"(?:\bprint|\b\w*(?:log|LOG)\w*\.(?:debug|info|warning|warn|error|critical|exception|log))"
                          r"\(\s*(?:[\w.]+\s*,\s*)?[fFrRuU]*$")
"""A line's text up to a string's opening quote, where that string is what print, or a logger
(`logger.info(`, `logging.info(`, `log.log(logging.INFO, `), writes first."""
_LINE_START = (r"^(?:\[[^\]]*\]<std\w+>:)?"
               r"(?:[^\n]*?\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b(?::[\w.<>-]+:|\|[^\]\n]*\])?)?"
               r"[^A-Za-z\n]*?")
"""A log line's start up to a printed name that begins it: mpirun's `[1,mpirank:0,algo-1]<stdout>:` prefix
(docs/sagemaker-contract.md §11), what a logging format writes before the message (its time, then a level, as
`INFO:__main__:`, `2026-11-28 10:00:00,123 - __main__ - INFO - `, transformers' `[INFO|train.py:12] ... >> `) and
values (`3: loss=`); no word of the message."""
_ONE_LINE_OPTION = re.compile(r"""add_argument\(\s*(?:["']-\w["']\s*,\s*)?["'](?P<flag>--[\w.-]+)["']"""
                              r"""(?P<rest>[^()\n]*)""")
_ONE_LINE_DEFAULT = re.compile(r"""\bdefault\s*=\s*(?P<value>[^,)]+)""")
_ONE_LINE_TYPE = re.compile(r"""\btype\s*=\s*(?P<name>[\w.]+)""")
_ONE_LINE_REQUIRED = re.compile(r"""\brequired\s*=\s*True\b""")
_NO_VALUE_ACTIONS = ("store_true", "store_false", "store_const", "count", "help", "version",
                     "BooleanOptionalAction")
"""argparse actions whose option takes no value: SageMaker passes every hyperparameter as `--name value`, which
such an option refuses (`unrecognized arguments: True`)."""


@dataclass(frozen=True)
class ScriptOption:
    """One `add_argument("--name", ...)` of the script: what `init` writes as a hyperparameter, or says why not."""

    name: str
    """The flag without its dashes, as SageMaker passes it back (`--batch-size 64` from `batch-size: 64`)."""
    default: Any = None
    left_out: str | None = None
    """Why it is no hyperparameter of the starting spec (a flag that takes no value, no literal default, a
    secret), or None."""


@dataclass(frozen=True)
class PrintedMetric:
    """A metric the script prints as `name=value` or `name: value`, as a SageMaker metric definition."""

    key: str
    separator: str
    evaluated: bool = False
    """Its line says an evaluation printed it (`Test set: Average loss: {:.4f}`): a validation metric."""
    line_word: str = ""
    """A word printed before it on its line, where its regex starts (`Test`, `Train`), or "": set where the same
    name is printed on a training and an evaluation line, so each regex reads its own line only."""
    percent: bool = False
    """It is printed as a count of a total with a percentage (`Accuracy: {}/{} ({:.0f}%)`): the percentage is
    read, not the count."""
    line_start: bool = False
    """It begins its printed line, no word before it (`print(f"loss={loss}")`), and the same name is printed on an
    evaluation line too (`Evaluation: loss=...`): its regex reads only lines that begin so, not that one."""

    @property
    def name(self) -> str:
        for prefix in _VALIDATION_PREFIXES:
            if self.key.lower().startswith(prefix):
                return f"validation:{self.key[len(prefix):]}"
        if self.evaluated:
            return f"validation:{self.key}"
        return f"train:{self.key.removeprefix(_TRAIN_PREFIX) or self.key}"

    @property
    def regex(self) -> str:
        line = rf"\b{self.line_word}\b.*?" if self.line_word else _LINE_START if self.line_start else ""
        value = r"[0-9]+\s*/\s*[0-9]+\s*\(\s*([-+0-9.eE]+)\s*%\)" if self.percent else r"([-+0-9.eE]+)"
        return rf"{line}\b{self.key}{self.separator.strip()}\s*{value}"


@dataclass(frozen=True)
class ScriptReading:
    """What one script reads and prints."""

    channels: tuple[str, ...] = ()
    """Channel names from `SM_CHANNEL_<NAME>`, lower case as the toolkit's variable is the name upper-cased."""
    reads_all_channels: bool = False
    """It reads `SM_CHANNELS` (or builds `SM_CHANNEL_{name}`): its channels are not spelled out."""
    torchrun: bool = False
    """It reads RANK, LOCAL_RANK or WORLD_SIZE, or joins a process group without ranking itself by host."""
    mpi: bool = False
    uses_gpu: bool = False
    options: tuple[ScriptOption, ...] = ()
    positionals: tuple[str, ...] = ()
    """Positional arguments argparse requires: SageMaker passes options only, so the script stops at its start."""
    metrics: tuple[PrintedMetric, ...] = ()
    parsed: bool = True
    """False where the text is no Python that parses here: read by patterns only."""
    unparsed_line: int | None = None
    """The line Python stopped at, where it did not parse: the first notebook line where there is one."""
    ipython: bool = False
    """It holds a notebook's `!command` or `%magic` lines, which no Python runs."""
    needs_subcommand: bool = False
    """It starts LightningCLI as it runs by default, expecting `fit` before its options: SageMaker passes options
    only."""
    dataclass_options: bool = False
    """Its options are HfArgumentParser dataclasses' fields, which are not read (no add_argument to read)."""
    frameworks: FrameworkReading = field(default_factory=FrameworkReading)
    """The training frameworks it imports and trains with."""


def read_script(text: str, modules: tuple[str, ...] = (), option_modules: tuple[str, ...] = ()) -> ScriptReading:
    """What `text`, a training script's source, reads and prints; never raises on any text.

    `modules` are the texts of the folder's own modules it imports: what they open, read and print the job does
    too (its channels, launcher variables, CUDA use, metrics). `option_modules`, those of them whose function the
    script calls (`from args import parse_args`; `parse_args()`), give their argparse options too: the parser
    built there is the script's. Whether the script parses, and what stops it at its start, are its own."""
    whole = "\n".join((text, *modules))
    unparsed_line = None
    try:
        tree: ast.Module | None = python_source.parse(text)
    except SyntaxError as error:
        tree, unparsed_line = None, error.lineno
    except (ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        tree = None
    ipython = _IPYTHON_LINE.search(text) if tree is None else None
    if ipython:
        unparsed_line = text.count("\n", 0, ipython.start()) + 1
    options, positionals = _options(text, tree, option_modules)
    torchrun = bool(_TORCHRUN.search(whole)) and not _HOST_RANKS.search(whole)
    return ScriptReading(
        channels=tuple(dict.fromkeys(name.lower() for name in _CHANNEL.findall(whole))),
        reads_all_channels=bool(_ALL_CHANNELS.search(whole)),
        torchrun=torchrun,
        mpi=bool(_MPI.search(whole)) and not torchrun,
        uses_gpu=bool(_GPU.search(whole)),
        options=options,
        positionals=positionals,
        metrics=_printed_metrics(whole),
        parsed=tree is not None,
        unparsed_line=unparsed_line,
        ipython=ipython is not None,
        needs_subcommand=bool(_LIGHTNING_CLI.search(text)) and not _LIGHTNING_CLI_RUNS_NOTHING.search(text),
        dataclass_options=bool(_DATACLASS_PARSER.search(text)),
        frameworks=read_frameworks(text, tuple(str(option.default) for option in options
                                               if option.name in _DEEPSPEED_OPTIONS and option.default), tree),
    )


def _options(text: str, tree: ast.Module | None, option_modules: tuple[str, ...]
             ) -> tuple[tuple[ScriptOption, ...], tuple[str, ...]]:
    """The script's options and required positionals, then those of the modules whose parser it calls; an option
    the script declares itself comes first."""
    options: dict[str, ScriptOption] = {}
    positionals: list[str] = []
    for source, parsed in ((text, tree), *((module, parsed_tree(module)) for module in option_modules)):
        found, required = _tree_options(parsed) if parsed is not None else (_line_options(source), ())
        for option in found:
            options.setdefault(option.name, option)
        positionals += required
    return tuple(options.values()), tuple(dict.fromkeys(positionals))


def _tree_options(tree: ast.Module) -> tuple[tuple[ScriptOption, ...], tuple[str, ...]]:
    """The options of every `add_argument` call, and the positional arguments argparse requires."""
    found: dict[str, ScriptOption] = {}
    positionals: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        flag = next((flag for flag in flags if flag.startswith("--") and len(flag) > 2), None)
        if flag is None:
            if flags and not flags[0].startswith("-") and _literal(keywords.get("nargs")) not in ("?", "*"):
                positionals.append(flags[0])
            continue
        action = keywords.get("action")
        parsed_by = keywords.get("type")
        found.setdefault(flag, _option(flag[2:], keywords.get("default"), _Read(
            action=(action.value if isinstance(action, ast.Constant) else
                    action.attr if isinstance(action, ast.Attribute) else None),
            type_name=parsed_by.id if isinstance(parsed_by, ast.Name) else None if parsed_by is None else "",
            required=_literal(keywords.get("required")) is True)))
    return tuple(found.values()), tuple(dict.fromkeys(positionals))


def _literal(node: ast.expr | None) -> Any:
    return node.value if isinstance(node, ast.Constant) else None


@dataclass(frozen=True)
class _Read:
    """How argparse reads one option's value: its action, the name of its `type=` (None: none given, "" not a
    name), and whether it is required."""

    action: str | None = None
    type_name: str | None = None
    required: bool = False


def _option(name: str, default: ast.expr | None, read: _Read) -> ScriptOption:
    if read.action in _NO_VALUE_ACTIONS:
        return ScriptOption(name, left_out=f"a flag ({read.action}) takes no value, and SageMaker passes one")
    try:
        value = ast.literal_eval(default) if default is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ScriptOption(name, left_out="its default is computed, not written")
    if value is None and read.required:
        return ScriptOption(name, left_out="REQUIRED, with no default: the script stops at its start without it; "
                                           "add it under hyperparameters")
    if isinstance(value, bool) and read.type_name in (None, "bool"):
        return ScriptOption(name, left_out=f"SageMaker would pass it as the text {value}, which argparse "
                                           f"({'type=bool' if read.type_name else 'no type='}) makes a true value")
    return _valued(name, value)


def _valued(name: str, value: Any) -> ScriptOption:
    if value is None:
        return ScriptOption(name, left_out="it has no default")
    if not isinstance(value, (bool, int, float, str)):
        return ScriptOption(name, left_out="its default is a list or mapping, which arrives as one string")
    if is_secret_name(name) and not holds_no_secret(value, name):
        return ScriptOption(name, left_out="it looks like a secret: pass it from a secret store, not the spec")
    if isinstance(value, str) and (not value or any(character.isspace() for character in value)):
        return ScriptOption(name, left_out="its default is empty or holds a space, and the container runs the command "
                                           "line through /bin/sh: it would arrive as no value or as two words")
    return ScriptOption(name, default=value)


def _line_options(text: str) -> tuple[ScriptOption, ...]:
    """argparse options written on one line, for a script that does not parse."""
    found: dict[str, ScriptOption] = {}
    for match in _ONE_LINE_OPTION.finditer(text):
        name, rest = match["flag"][2:], match["rest"]
        default = _ONE_LINE_DEFAULT.search(rest)
        typed = _ONE_LINE_TYPE.search(rest)
        read = _Read(action=next((action for action in _NO_VALUE_ACTIONS if action in rest), None),
                     type_name=typed["name"] if typed else None, required=bool(_ONE_LINE_REQUIRED.search(rest)))
        try:
            found.setdefault(name, _option(name, python_source.parse(default["value"].strip(), mode="eval").body
                                           if default else None, read))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            found.setdefault(name, ScriptOption(name, left_out="its default is computed, not written"))
    return tuple(found.values())


def _printed_metrics(text: str) -> tuple[PrintedMetric, ...]:
    """The metrics printed, one per name whatever its case (CloudWatch would show `Loss` and `loss` as two)."""
    printed = [(match.start(), metric) for match in _PRINTED_METRIC.finditer(text)
               if (metric := _printed_metric(text, match))]
    evaluated_keys = {metric.key for _, metric in printed if metric.evaluated}
    found: dict[str, PrintedMetric] = {}
    for at, metric in printed:
        if metric.key in evaluated_keys and not metric.evaluated:  # `loss` on the test line too: start at a word
            training_word = _WORD.search(_literal_before(text, at))  # of this line (`Train Epoch: {} ... Loss`),
            metric = replace(metric, line_word=training_word[0] if training_word else "",  # or at the line's start
                             line_start=not training_word and _printed_first(text, at))
        found.setdefault(metric.name.lower(), metric)
    return tuple(found.values())


def _printed_metric(text: str, match: re.Match[str]) -> PrintedMetric | None:
    key = match["key"]
    if not (_METRIC_WORDS & set(key.lower().split("_")) or "learning_rate" in key.lower()):
        return None
    count_of_total = _COUNT_OF_TOTAL.match(text, match.end("separator"))
    if count_of_total and not count_of_total["percent"]:
        return None  # `correct: {}/{}` is a count, no metric's value
    evaluation_words = _EVALUATION_WORD.findall(_literal_before(text, match.start()))
    return PrintedMetric(key, match["separator"], evaluated=bool(evaluation_words),
                         line_word=evaluation_words[-1] if evaluation_words else "", percent=bool(count_of_total))


def _printed_first(text: str, at: int) -> bool:
    """The string holding `at` is the first thing its `print(` writes."""
    before = text[text.rfind("\n", 0, at) + 1:at]
    quote = max(before.rfind('"'), before.rfind("'"))
    return quote >= 0 and bool(_PRINT_OPENS.search(before[:quote]))


def _literal_before(text: str, at: int) -> str:
    """The printed text before `at` in its string on its line, placeholders (`{val:.3f}`, `%d`) blanked: they
    are values, not printed words."""
    before = text[text.rfind("\n", 0, at) + 1:at]
    return _PLACEHOLDER.sub(" ", re.split(r"[\"']", before)[-1])

