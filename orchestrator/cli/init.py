"""`smtrain init [SOURCE_DIR]`: a new user's first command, a starting job spec for their own script, checked as
`validate` checks it before it is written."""

from __future__ import annotations

import os
from pathlib import Path

import click

from orchestrator.cli.options import instance_type_option, mode_option, terminal_safe


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
    missing). SOURCE_DIR may be the script itself.

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
    created = _write_checked(spec.text, spec_file, spec.local_folders)
    click.echo(f"wrote {terminal_safe(str(spec_file))}")
    for finding in spec.findings:
        click.echo(f"  {terminal_safe(finding)}")
    for folder in created:
        click.echo(f"  created {terminal_safe(os.path.relpath(folder))}/ (empty): put a sample of that channel's "
                   "data there for `smtrain local`")
    shown = terminal_safe(str(spec_file))
    click.echo(f"next:\n  smtrain validate {shown}\n  smtrain local {shown}\n"
               f"  smtrain plan {shown}      # what submit sends, and what it still needs (role, output path)\n"
               f"  smtrain submit {shown} --wait --logs")


def _write_checked(text: str, spec_file: Path, local_folders: tuple[Path, ...]) -> list[Path]:
    """Writes `text` at `spec_file` once it passes as `validate` passes a file, with the missing local input
    folders it names created empty (returned); where it does not pass, nothing is left behind."""
    from orchestrator.cli.validation import judged_as_validate
    from orchestrator.errors import SmtrainError, SpecError

    made = [folder for local in local_folders for folder in (*reversed(local.parents), local)
            if not folder.exists()]
    made = list(dict.fromkeys(made))
    draft = spec_file.with_name(f".{spec_file.name}.smtrain-init")
    try:
        for folder in made:
            folder.mkdir(exist_ok=True)
        draft.write_text(text, encoding="utf-8")
        judged_as_validate(str(draft))
        os.replace(draft, spec_file)
    except BaseException as error:
        draft.unlink(missing_ok=True)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        if isinstance(error, SmtrainError):
            said = str(error).replace(str(draft), str(spec_file))
            raise SpecError(f"the spec would not pass `smtrain validate`, so nothing was written:\n{said}",
                            fix="choose another --mode or --instance-type, then run init again") from None
        raise
    return [folder for folder in local_folders if folder in made]
