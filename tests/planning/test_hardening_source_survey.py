"""`smtrain init` on hostile folders: bounded work whatever the folder holds, only what packing would ship looked at,
and a script that cannot be read or parsed is no reason to fail."""

from __future__ import annotations

import os

import pytest

from orchestrator.errors import SpecError
from orchestrator.planning import source_survey
from orchestrator.planning.source_survey import survey_source

pytestmark = pytest.mark.hardening

GUARDED = 'if __name__ == "__main__":\n    print("loss=1")\n'


def test_what_packing_never_ships_is_never_taken_for_the_entry_point(tmp_path):
    for folder in (".git", ".venv", "node_modules", "runs/job-1", "env"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "train.py").write_text(GUARDED)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")  # a virtualenv under any name
    (tmp_path / "runs" / "job-1" / ".smtrain-run").write_text("")
    (tmp_path / ".smtrainignore").write_text("scratch/\n")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "train.py").write_text(GUARDED)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fit.py").write_text(GUARDED)

    assert survey_source(tmp_path).entry_point == "src/fit.py"


def test_a_folder_of_thousands_of_files_is_listed_only_to_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(source_survey, "MAX_FILES_LISTED", 50)
    (tmp_path / "train.py").write_text(GUARDED)
    for index in range(200):
        (tmp_path / f"shard-{index:04d}.bin").write_bytes(b"")
        (tmp_path / "data" / f"part-{index:04d}").mkdir(parents=True)
        (tmp_path / "data" / f"part-{index:04d}" / "rows.py").write_text("")
    opened = []
    real_walk = os.walk

    def counting_walk(*args, **kwargs):
        for step in real_walk(*args, **kwargs):
            opened.append(step[0])
            yield step

    monkeypatch.setattr(source_survey.os, "walk", counting_walk)

    survey = survey_source(tmp_path)

    assert survey.entry_point == "train.py" and not survey.listed_all
    assert len(opened) < 10  # the root, not 200 folders below it


def test_only_so_many_scripts_are_read_while_looking_for_the_entry_point(tmp_path, monkeypatch):
    monkeypatch.setattr(source_survey, "MAX_SCRIPTS_READ", 3)
    for index in range(10):
        (tmp_path / f"helper_{index}.py").write_text("x = 1\n")
    (tmp_path / "zz_run.py").write_text(GUARDED)
    read = []
    real = source_survey.source_file_text
    monkeypatch.setattr(source_survey, "source_file_text", lambda folder, name: read.append(name) or real(folder, name))

    with pytest.raises(SpecError, match="holds no training script"):
        survey_source(tmp_path)
    assert len(read) == 3


def test_a_huge_or_binary_entry_point_is_not_read_and_the_survey_still_answers(tmp_path):
    (tmp_path / "train.py").write_bytes(b"x = 1\n" * 400_000)  # 2.4 MB: over the 1 MiB a check reads
    huge = survey_source(tmp_path)
    assert not huge.readable and huge.reading.options == ()

    (tmp_path / "train.py").write_bytes(b"\x7fELF\x00\x00" + bytes(range(256)) * 10)
    binary = survey_source(tmp_path)
    assert not binary.readable and binary.reading.channels == ()


def test_a_fifo_named_train_py_is_not_opened(tmp_path):
    os.mkfifo(tmp_path / "train.py")  # reading it would wait forever
    with pytest.raises(SpecError, match="--entry-point"):
        survey_source(tmp_path)  # no regular file: not taken, and no other script


def test_several_candidates_are_named_and_the_option_given(tmp_path):
    (tmp_path / "fit.py").write_text(GUARDED)
    (tmp_path / "serve.py").write_text(GUARDED)
    (tmp_path / "test_fit.py").write_text(GUARDED)

    with pytest.raises(SpecError) as refused:
        survey_source(tmp_path)

    assert "several scripts could be the entry point: fit.py, serve.py" in str(refused.value)
    assert "--entry-point fit.py" in str(refused.value)
    assert survey_source(tmp_path, "serve.py").entry_point == "serve.py"


def test_an_entry_point_outside_the_folder_is_refused(tmp_path):
    (tmp_path / "outside.py").write_text(GUARDED)
    (tmp_path / "src").mkdir()
    with pytest.raises(SpecError, match="is not a file in"):
        survey_source(tmp_path / "src", "../outside.py")


def test_modules_importing_each_other_or_above_the_folder_are_each_read_once(tmp_path):
    (tmp_path / "train.py").write_text("import a\nfrom ....outside import secret\n")
    (tmp_path / "a.py").write_text("from b import *\nimport train\nimport a\n")
    (tmp_path / "b.py").write_text("from a import *\nimport binary\nfrom transformers import Trainer\nTrainer()\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01import transformers\n")  # not text: not read

    survey = survey_source(tmp_path)

    assert survey.imported_modules == ("a.py", "b.py")
    assert survey.reading.frameworks.launcher == "transformers Trainer"


def test_a_helper_modules_argparse_is_the_scripts_only_where_the_script_calls_into_it(tmp_path):
    (tmp_path / "train.py").write_text("from tools import SEED\nimport config as cfg\n\nopts = cfg.options()\n")
    (tmp_path / "tools.py").write_text("import argparse\nSEED = 1\nif __name__ == '__main__':\n"
                                       "    argparse.ArgumentParser().add_argument('--dataset-url', default='x')\n")
    (tmp_path / "config.py").write_text("import argparse\ndef options():\n    parser = argparse.ArgumentParser()\n"
                                        "    parser.add_argument('--batch-size', default=64)\n"
                                        "    parser.add_argument('data_dir')\n    return parser.parse_args()\n")

    survey = survey_source(tmp_path)

    assert [option.name for option in survey.reading.options] == ["batch-size"]
    assert survey.reading.positionals == ("data_dir",)
