"""The source tarball goes up by boto3's managed transfer from its temporary file, against moto's server: in parts
above the TransferConfig's threshold (S3's part checksums then decide reuse), its bytes reported as progress, and
an upload cut short by Ctrl-C leaves no parts and no object."""

from __future__ import annotations

import os
import signal
import threading

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from job_fakes import BUCKET

from orchestrator.api import plan
from orchestrator.cloud.submission import ensure_source_uploaded
from orchestrator.planning.source_progress import reported_to
from orchestrator.planning.target import S3Uri

PART = 5 * 1024 * 1024  # S3's smallest part
IN_PARTS = TransferConfig(multipart_threshold=PART, multipart_chunksize=PART, preferred_transfer_client="classic")


class Recorder:
    """A progress listener keeping what it heard; `on_advance` runs at each report."""

    def __init__(self, on_advance=lambda: None) -> None:
        self.stages: list[tuple[str, int, int | None]] = []
        self.done_bytes = 0
        self._on_advance = on_advance

    def begin(self, stage: str, total_bytes: int, total_files: int | None) -> None:
        self.stages.append((stage, total_bytes, total_files))

    def advance(self, done_bytes: int, done_files: int) -> None:
        self.done_bytes += done_bytes
        self._on_advance()

    def end(self) -> None:
        pass


@pytest.fixture
def big_plan(write_spec, calls, tmp_path):
    """A plan whose tarball is two parts of IN_PARTS: random bytes do not compress."""
    spec = write_spec()
    (tmp_path / "src" / "weights.bin").write_bytes(os.urandom(PART + 1024))
    return plan(spec, boto=calls[0])


def test_a_source_over_the_threshold_goes_up_in_parts_and_is_reused_by_its_part_checksums(big_plan, bucket, calls):
    session, sent = calls
    heard = Recorder()

    with reported_to(heard):
        assert ensure_source_uploaded(big_plan, session, IN_PARTS)

    assert sent == ["s3.HeadObject", "s3.CreateMultipartUpload", "s3.UploadPart", "s3.UploadPart",
                    "s3.CompleteMultipartUpload"]
    assert heard.stages == [("uploading", big_plan.source.size_bytes, None)]
    assert heard.done_bytes == big_plan.source.size_bytes
    key = S3Uri.parse(big_plan.source_uri).key
    s3 = boto3.client("s3")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == big_plan.source.tarball.read_bytes()
    stored = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")["ChecksumSHA256"]
    assert stored.endswith("-2") and stored != f"{big_plan.source.checksum_sha256}-2"  # S3's checksum of 2 parts
    sent.clear()
    assert not ensure_source_uploaded(big_plan, session, IN_PARTS)
    assert sent == ["s3.HeadObject"]


def test_an_upload_cut_short_by_ctrl_c_leaves_no_parts_and_no_object(big_plan, bucket, calls):
    session, sent = calls
    main = threading.main_thread().ident
    interrupted = []

    def ctrl_c() -> None:  # the first bytes of the first part are on their way: Ctrl-C, as a terminal sends it
        if not interrupted:
            interrupted.append(True)
            signal.pthread_kill(main, signal.SIGINT)

    with reported_to(Recorder(ctrl_c)), pytest.raises(KeyboardInterrupt):
        ensure_source_uploaded(big_plan, session, IN_PARTS)

    assert "s3.CreateMultipartUpload" in sent and "s3.AbortMultipartUpload" in sent
    s3 = boto3.client("s3")
    assert "Uploads" not in s3.list_multipart_uploads(Bucket=BUCKET)
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET)


def test_the_sizes_shown_are_human_sizes(big_plan, bucket, calls):
    from orchestrator.cloud.submission import Submission
    from orchestrator.planning.plan_view import plan_lines

    shown = dict(Submission(big_plan, source_uploaded=True).summary_rows())["source"]
    assert shown == "5.2 MB, uploaded"
    assert any(f"{len(big_plan.source.files)} files, 5.2 MB packed ->" in str(line) for line in plan_lines(big_plan))
