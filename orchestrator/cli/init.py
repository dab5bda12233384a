"""`smtrain init [SOURCE_DIR]`: a new user's first command, a starting job spec for their own script, checked as
`validate` checks it before it is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from orchestrator.cli.options import instance_type_option, mode_option, terminal_safe

if TYPE_CHECKING:
    from orchestrator.planning.starting_spec import StartingSpec


@click.command()
@click.argument("source_dir", default=".", type=click.Path(path_type=Path))
@click.option("--entry-point", metavar="PATH",
              help="The training script, relative to SOURCE_DIR [default: train.py, main.py, or the one script "
                   "with `if __name__ == \"__main__\":`].")
@mode_option
@instance_type_option
@click.option("--spec-file", "spec_file", default="job.yaml", show_default=True, metavar="PATH",
              type=click.Path(dir_okay=False, path_type=Path), help="Where to write the spec.")
@click.option("--force", is_flag=True, help="Replace the file at --spec-file if there is one.")
def init(source_dir: Path, entry_point: str | None, mode: str | None, instance_type: str | None, spec_file: Path,
         force: bool) -> None:
    """Write a starting job spec for your own training script in SOURCE_DIR (default: here).

    It reads the folder, never running it: the entry point, requirements.txt, the channels the script reads
    (SM_CHANNEL_<NAME>), how it expects to be launched (RANK/LOCAL_RANK/WORLD_SIZE: torchrun), its argparse
    options with their defaults (as hyperparameters) and the metrics it prints (loss=...). The spec is written
    only if `smtrain validate` passes it; the role and output path are left for you, as commented placeholders.
    Each channel gets a data/<channel>/ beside the spec for `smtrain local` (created empty where
    missing; inside SOURCE_DIR, listed in its .smtrainignore so it is not uploaded). SOURCE_DIR may be the script
    itself.

    \b
    Examples:
      smtrain init
      smtrain init src --entry-point train.py --spec-file my-job.yaml
      smtrain init src/train.py
      smtrain init src --mode torch_distributed --instance-type ml.g5.12xlarge --force
    """
    from orchestrator.errors import SpecError
    from orchestrator.planning.source_survey import survey_source
    from orchestrator.planning.starting_spec import Choices, starting_spec

    if spec_file.exists() and not force:
        raise SpecError(f"{spec_file} exists", fix="pass --force to replace it, or --spec-file to write another file")
    if not spec_file.parent.resolve().is_dir():
        raise SpecError(f"{spec_file.parent} is not a folder", fix="create it, or give --spec-file a path in one")
    if source_dir.is_file() and entry_point is None:  # `smtrain init train.py`: the script, in its folder
        source_dir, entry_point = source_dir.parent, source_dir.name
    survey = survey_source(source_dir, entry_point)
    spec = starting_spec(survey, spec_file, Choices(mode=mode, instance_type=instance_type))
    created = _write_checked(spec, spec_file)
    click.echo(f"wrote {terminal_safe(str(spec_file))}")
    for finding in spec.findings:
        click.echo(f"  {terminal_safe(finding)}")
    for folder in created:
        click.echo(f"  created {terminal_safe(os.path.relpath(folder))}/ (empty): put a sample of that channel's "
                   "data there for `smtrain local`")
    if spec.unshipped:
        click.echo(f"  added {' '.join(terminal_safe(line) for line in spec.unshipped)} to "
                   f"{terminal_safe(os.path.relpath(spec.ignore_file))}: the local data inside source_dir is not "
                   "packed or uploaded with the code")
    shown = terminal_safe(str(spec_file))
    click.echo(f"next:\n  smtrain validate {shown}\n  smtrain local {shown}\n"
               f"  smtrain plan {shown}      # what submit sends, and what it still needs (role, output path)\n"
               f"  smtrain submit {shown} --wait --logs")


def _write_checked(spec: StartingSpec, spec_file: Path) -> list[Path]:
    """Writes the spec at `spec_file` once it passes as `validate` passes a spec, with the missing local input
    folders it names created empty (returned) and those inside source_dir added to its `.smtrainignore`; where it
    does not pass, nothing is left behind."""
    from orchestrator.cli.validation import judged_spec
    from orchestrator.errors import SmtrainError, SpecError

    made = [folder for local in spec.local_folders for folder in (*reversed(local.parents), local)
            if not folder.exists()]
    made = list(dict.fromkeys(made))
    draft = spec_file.with_name(f".{spec_file.name}.smtrain-init")
    ignored_before = spec.ignore_file.read_bytes() if spec.unshipped and spec.ignore_file.is_file() else None
    try:
        for folder in made:
            folder.mkdir(exist_ok=True)
        if spec.unshipped:
            _add_lines(spec.ignore_file, ignored_before, spec.unshipped)
        draft.write_text(spec.text, encoding="utf-8")
        judged_spec(str(draft))
        os.replace(draft, spec_file)
    except BaseException as error:
        draft.unlink(missing_ok=True)
        if spec.unshipped:
            _restore(spec.ignore_file, ignored_before)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        if isinstance(error, SmtrainError):
            said = str(error).replace(str(draft), str(spec_file))
            raise SpecError(f"the spec would not pass `smtrain validate`, so nothing was written:\n{said}",
                            fix="choose another --mode or --instance-type, then run init again") from None
        raise
    return [folder for folder in spec.local_folders if folder in made]


def _add_lines(ignore_file: Path, before: bytes | None, lines: tuple[str, ...]) -> None:
    """Appends `lines` to `.smtrainignore`, byte for byte after what it held."""
    start = b"" if not before or before.endswith(b"\n") else b"\n"
    added = "# smtrain init: local data for `smtrain local`, not shipped\n" + "".join(f"{line}\n" for line in lines)
    ignore_file.write_bytes((before or b"") + start + added.encode("utf-8"))


def _restore(ignore_file: Path, before: bytes | None) -> None:
    if before is None:
        ignore_file.unlink(missing_ok=True)
    else:
        ignore_file.write_bytes(before)
