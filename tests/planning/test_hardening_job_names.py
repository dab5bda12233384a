"""Generated job names: two made in the same millisecond, in one process or in two, differ, and every
name is one SageMaker accepts."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from orchestrator.planning.job_name import timestamped_job_name
from orchestrator.specs.model import MAX_BASE_NAME_LENGTH, api_limit

pytestmark = pytest.mark.hardening

SAGEMAKER_NAME = re.compile(api_limit("TrainingJobName", "pattern"))
SHAPE = r"-\d{4}(-\d{2}){5}-\d{3}-[0-9a-z]{4}"


def test_names_made_in_one_millisecond_differ():
    names = [timestamped_job_name("job") for _ in range(2000)]  # many share a millisecond
    assert len(set(names)) == len(names)
    assert all(re.fullmatch("job" + SHAPE, name) for name in names)


def test_names_made_on_several_threads_differ():
    with ThreadPoolExecutor(8) as pool:
        names = list(pool.map(lambda _: timestamped_job_name("job"), range(4000)))
    assert len(set(names)) == len(names)


def test_a_millisecond_seen_again_keeps_its_tags(monkeypatch):
    """A thread that read one millisecond and names its job after another thread named one in the next (or a
    clock stepped back) must not get a tag already given with that millisecond. Tags of one character make a
    clash certain if the earlier millisecond's tags were forgotten: 36 names per stamp use every tag once."""
    from orchestrator.planning import job_name

    clock = iter([1764151357.123, 1764151357.124] * 36)
    monkeypatch.setattr(job_name.time, "time", lambda: next(clock))
    monkeypatch.setattr(job_name._NameTags, "LENGTH", 1)
    monkeypatch.setattr(job_name, "_NAME_TAGS", job_name._NameTags())
    names = [timestamped_job_name("job") for _ in range(72)]
    assert len(set(names)) == 72


def test_names_made_by_two_processes_at_once_differ():
    """Two submitting processes naming jobs in the same millisecond (their clocks pinned to it, so the test does
    not hang on the two being scheduled together) get different names: each draws its own random tags. Ten names
    each: a clash by chance is once in 17,000 runs; two processes drawing the same tags would clash ten times."""
    script = ("import time\nfrom orchestrator.planning.job_name import timestamped_job_name\n"
              "time.time = lambda: 1764151357.123\n"
              "print('\\n'.join(timestamped_job_name('job') for _ in range(10)))\n")
    outputs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              timeout=600).stdout.split() for _ in range(2)]
    stamps = {re.match(r"job-(\d{4}(-\d{2}){5}-\d{3})", name).group(1) for output in outputs for name in output}
    assert stamps == {"2025-11-26-10-02-37-123"}, stamps
    assert len(outputs[0]) == len(outputs[1]) == 10
    assert len(set(outputs[0]) | set(outputs[1])) == 20, outputs


def test_a_longest_base_still_gives_a_name_sagemaker_accepts():
    base = "b" * MAX_BASE_NAME_LENGTH
    name = timestamped_job_name(base)
    assert len(name) <= api_limit("TrainingJobName", "max") and SAGEMAKER_NAME.fullmatch(name)
    assert re.fullmatch("b+" + SHAPE, name)
