"""How a fix names a field for the user to give, in the form the user is in: a spec file and the command line, the
Python API (a spec, and `submit`'s keywords for the CLI's options), or a function job's decorator (no spec at all).
One place words these, so that a rule's fix, a refusal and a finding say the same thing to the same user."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from orchestrator.declaration import declarations, default_of, flag_of


@dataclass(frozen=True)
class FieldWords:
    """How a fix names a top-level field for the user to give: in the spec, or, where a call's keywords stand for
    the spec (a function job's `@orchestrator.remote(...)`, which has no spec to edit), as that call's keyword."""

    keywords_of: str | None = None
    options_as_keywords: bool = False
    """The Python API: a spec, with the keyword of `submit` that does what the CLI's option does."""

    def lacks(self, field: str) -> str:
        """E.g. "the spec has no `role:`"."""
        return f"{self.keywords_of} has no `{field}=`" if self.keywords_of else f"the spec has no `{field}:`"

    def set(self, field: str, value: str = "") -> str:
        """E.g. "set `role: arn:...` in the spec", or "pass `role='arn:...'` to @orchestrator.remote(...)"."""
        if self.keywords_of:
            return f"pass `{field}={repr(value) if value else ''}` to {self.keywords_of}"
        return f"set `{field}:{f' {value}' if value else ''}` in the spec"

    def switch_on(self, field: str, flag: str) -> str:
        """E.g. "set `allow_unverified: true` in the spec (or pass --allow-unverified)", "... (or pass
        allow_unverified=True)" from Python, or "pass `allow_unverified=True` to @orchestrator.remote(...)", whose
        user has neither a spec nor a command line."""
        if self.keywords_of:
            return f"pass `{field}=True` to {self.keywords_of}"
        return f"set `{field}: true` in the spec (or pass {f'{field}=True' if self.options_as_keywords else flag})"

    def name_region(self) -> str:
        """The ways to name a region, a list for the caller to end (", or set AWS_REGION"): "pass --region REGION,
        set `region:` in the spec" (`--region` is the command line's one spelling of a region, docs/cli.md), "pass
        `region=`, set `region:` in the spec" from Python, or "pass `region=` to @orchestrator.remote(...)", whose
        user has neither a spec nor a command line."""
        if self.keywords_of:
            return self.set("region")
        return f"pass {'`region=`' if self.options_as_keywords else '--region REGION'}, {self.set('region')}"

    def option(self, options: type, name: str, value: Any = None) -> str:
        """The option `name` that `options` declares (`declaration.py`: its keyword and its flag, declared once)
        as this user gives it, with `value` where one is given: `--master-host algo-9`, `--input train=./data`,
        `--run-dir` on the command line; `master_host='algo-9'`, `inputs={'train': './data'}`, `run_dir=` from
        Python. A pairs option's value is one (NAME, VALUE) pair; a switch is its flag, or the keyword that does
        the same (`gpu_standin=False`)."""
        declared = declarations(options)[name]
        takes = declared.takes
        if not (self.options_as_keywords or self.keywords_of):
            flag = flag_of(options, name)
            if value is None or takes == "flag":
                return flag
            return f"{flag} {'='.join(map(str, value)) if takes == 'pairs' else declared.word(value)}"
        if takes == "flag":
            return f"{name}={not default_of(options, name)}"
        if value is None:
            return f"{name}="
        if takes == "pairs":
            return f"{name}={{{value[0]!r}: {_literal(value[1])}}}"
        return f"{name}={_literal(value)}"

    def one_run_input(self, name: str) -> str:
        """A local copy of channel `name` for one local run, for layers below the run's options (a plan's refusal):
        what `option(Options, "inputs", (name, "<local path>"))` says, `--input train=<local path>` of smtrain
        local, or `inputs={'train': '<local path>'}` of a local run from Python (a test holds the two alike)."""
        if self.options_as_keywords or self.keywords_of:
            return f"inputs={{{name!r}: '<local path>'}}"
        return f"--input {name}=<local path>"

    def changed(self, field: str, value: str) -> str:
        """A field of a spec already given, changed for another run: `--set instance.count=N` on the command line;
        from Python, whose `run` takes no keyword for a spec's fields, "`instance.count: N` in the spec" (or the
        dict); a function job's decorator keyword for it."""
        if self.keywords_of:
            return f"the keyword of {self.keywords_of} that sets `{field}`"
        if self.options_as_keywords:
            return f"`{field}: {value}` in the spec"
        return f"--set {field}={value}"

    @property
    def overrides(self) -> str:
        """What changes a spec's fields as it is read: `--set`, `overrides=` (of `load_spec`, `load_tuning`) from
        Python, a function job's decorator keywords."""
        if self.keywords_of:
            return f"the keywords of {self.keywords_of}"
        return "overrides=" if self.options_as_keywords else "--set"

    @property
    def allow_unverified(self) -> str:
        """The one wording of the way past an unverified finding, for a rule's fix and for submit's refusal."""
        return self.switch_on("allow_unverified", "--allow-unverified")

    @property
    def given_in(self) -> str:
        """Where the user wrote the fields: "the spec", or "the keywords of @orchestrator.remote(...)"."""
        return f"the keywords of {self.keywords_of}" if self.keywords_of else "the spec"


def _literal(value: Any) -> str:
    """`value` as Python source a user types: a path as its string (`'/data'`, not `PosixPath('/data')`)."""
    return repr(str(value) if isinstance(value, PurePath) else value)


SPEC_WORDS = FieldWords()
"""A spec file and the command line."""
API_WORDS = FieldWords(options_as_keywords=True)
"""A spec given to the Python API (`orchestrator.plan`, `submit`, `run`)."""
