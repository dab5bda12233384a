"""An S3 channel is downloaded into smtrain's cache and nowhere else: an object key or a channel prefix
with `..` segments is refused (exit 2), before anything lands outside the cache. moto's server stands in for S3."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
import yaml

from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing.layout import release_directory
from orchestrator.emulator.preparing.prepared_run import PreparedRun, prepare_run
from orchestrator.emulator.run_options import Options
from orchestrator.errors import SpecError
from orchestrator.specs.loader import load
from orchestrator.specs.words import API_WORDS, SPEC_WORDS, FieldWords

pytestmark = pytest.mark.hardening


def _spec(tmp_path: Path, channel: str) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print(1)\n")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "dl", "entry_point": "train.py", "source_dir": "src",
                                    "framework_version": "2.3.0", "instance": {"type": "ml.c5.2xlarge"},
                                    "metrics": [], "inputs": {"train": channel}}))
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch, aws):
    root = tmp_path / "deep" / "er" / "cache"
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(root))
    boto3.client("s3").create_bucket(Bucket="chan-bucket")
    return root


def _everything_under(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}


def test_an_object_key_that_climbs_out_of_the_channel_is_refused(tmp_path, cache):
    s3 = boto3.client("s3")
    s3.put_object(Bucket="chan-bucket", Key="data/train/ok.csv", Body=b"1\n")
    s3.put_object(Bucket="chan-bucket", Key="data/train/../../../../../escaped.txt", Body=b"owned\n")
    assert any(".." in item["Key"] for item in s3.list_objects_v2(Bucket="chan-bucket")["Contents"])
    with pytest.raises(SpecError, match=r"has a `\.\.` path segment, so its file would land outside") as refused:
        _prepare(_spec(tmp_path, "s3://chan-bucket/data/train/"), Options(run_dir=tmp_path / "run"), API_WORDS)
    assert refused.value.fix == "rename the object, or give a local copy of the channel with inputs={'train': " \
                                "'<local path>'}"
    assert not list(tmp_path.rglob("escaped.txt"))  # it would land in tmp_path/deep/er/, above the cache


def test_a_channel_prefix_that_climbs_out_of_the_cache_is_refused(tmp_path, cache):
    boto3.client("s3").put_object(Bucket="chan-bucket", Key="../../D/x.csv", Body=b"1\n")
    with pytest.raises(SpecError, match=r"has a `\.\.` path segment; its download would land outside"):
        _prepare(_spec(tmp_path, "s3://chan-bucket/../../D/"), Options(run_dir=tmp_path / "run"))
    assert not (cache.parent / "D").exists() and not (cache / "D").exists() and not list(tmp_path.rglob("D"))


def test_an_ordinary_channel_is_downloaded_into_the_cache(tmp_path, cache):
    boto3.client("s3").put_object(Bucket="chan-bucket", Key="data/train/sub/ok.csv", Body=b"1\n")
    prepared = _prepare(_spec(tmp_path, "s3://chan-bucket/data/train/"),
                        Options(run_dir=tmp_path / "run"))
    assert (prepared.layout.hosts[0].data_dir / "train" / "sub" / "ok.csv").read_text() == "1\n"
    assert _everything_under(cache / "s3") == {"chan-bucket/data/train/sub/ok.csv"}


def _prepare(spec: Path, settings: Options, words: FieldWords = SPEC_WORDS) -> PreparedRun:
    """The run prepared as `run_local` prepares it: planned for this machine first, then written out; the run
    directory let go as `run_local` lets go of it when its run ends. `words`: its user's, the CLI's or the API's."""
    prepared = prepare_run(local_plan(load(spec).in_words(words), settings), settings)
    release_directory(prepared.layout.root)
    return prepared


@pytest.mark.parametrize(("words", "local_copy"), [(SPEC_WORDS, "--input train=<local path>"),
                                                   (API_WORDS, "inputs={'train': '<local path>'}")])
def test_an_object_that_is_also_a_folder_of_others_gives_one_clear_error(tmp_path, cache, words, local_copy):
    """Its fix names a local copy of the channel as the run's user gives one: before, `--input` from Python too."""
    s3 = boto3.client("s3")
    s3.put_object(Bucket="chan-bucket", Key="data/train/a", Body=b"1\n")
    s3.put_object(Bucket="chan-bucket", Key="data/train/a/b", Body=b"2\n")
    with pytest.raises(SpecError, match=r"'a' is an object and also the folder of 'a/b'") as refused:
        _prepare(_spec(tmp_path, "s3://chan-bucket/data/train/"), Options(run_dir=tmp_path / "run"), words)
    assert refused.value.fix == f"rename one of them, or give a local copy of the channel with {local_copy}"


def test_an_object_deleted_from_s3_is_not_served_from_the_cache(tmp_path, cache):
    s3 = boto3.client("s3")
    s3.put_object(Bucket="chan-bucket", Key="data/train/keep.csv", Body=b"1\n")
    s3.put_object(Bucket="chan-bucket", Key="data/train/gone.csv", Body=b"2\n")
    s3.put_object(Bucket="chan-bucket", Key="data/train/marker/", Body=b"")
    spec = _spec(tmp_path, "s3://chan-bucket/data/train/")
    _prepare(spec, Options(run_dir=tmp_path / "run"))
    s3.delete_object(Bucket="chan-bucket", Key="data/train/gone.csv")
    prepared = _prepare(spec, Options(run_dir=tmp_path / "run"))
    assert sorted(path.name for path in (prepared.layout.hosts[0].data_dir / "train").iterdir()) == ["keep.csv"]
    assert _everything_under(cache / "s3") == {"chan-bucket/data/train/keep.csv"}


def test_an_s3_channel_without_credentials_names_both_local_copies(monkeypatch):
    """The fix named --input only; a spec's `local_inputs:` (docs/local.md) gives the copy to every local run."""
    from orchestrator.cloud import sdk
    from orchestrator.emulator.preparing import prepared_run
    from orchestrator.errors import EnvironmentProblem
    from orchestrator.specs.words import SPEC_WORDS

    monkeypatch.setattr(sdk, "boto_session", lambda: type("NoCredentials", (), {"get_credentials": lambda self: None})())

    with pytest.raises(EnvironmentProblem) as raised:
        prepared_run._download_channel("train", "s3://chan-bucket/data/", SPEC_WORDS)

    assert "`local_inputs: {train: ./data}` in the spec" in raised.value.fix
    assert "--input train=./data" in raised.value.fix
