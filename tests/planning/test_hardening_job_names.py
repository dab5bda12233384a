"""Generated job names: two made in the same millisecond, in one process or in two, differ, and every
name is one SageMaker accepts."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from orchestrator.planning.job_name import timestamped_job_name
from orchestrator.spec.model import MAX_BASE_NAME_LENGTH, api_limit

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


def test_names_made_by_two_processes_at_once_differ():
    """Two submitting processes started together, each naming one job per millisecond for a second: where both
    named a job in the same millisecond, the names differ. (A clash stays possible, once in 1.7 million pairs.)"""
    script = ("import sys, time\nfrom orchestrator.planning.job_name import timestamped_job_name\n"
              "print('ready', flush=True)\n"
              "start = float(sys.stdin.readline())\nwhile time.time() < start: pass\nnames, last = [], None\n"
              "while time.time() < start + 1:\n"
              "    if int(time.time() * 1000) != last:\n"
              "        last = int(time.time() * 1000)\n"
              "        names.append(timestamped_job_name('job'))\n"
              "print('\\n'.join(names))\n")
    processes = [subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True) for _ in range(2)]
    # The common start is set once both have imported smtrain, however long that takes on this machine.
    assert [process.stdout.readline() for process in processes] == ["ready\n", "ready\n"]
    start = f"{time.time() + 0.5}\n"
    for process in processes:
        process.stdin.write(start)
        process.stdin.close()
    outputs = [process.stdout.read().split() for process in processes]
    assert [process.wait(timeout=600) for process in processes] == [0, 0]
    stamps = [{re.match(r"job-(\d{4}(-\d{2}){5}-\d{3})", name).group(1) for name in output} for output in outputs]
    assert stamps[0] & stamps[1], "the two processes never named a job in the same millisecond"
    assert not set(outputs[0]) & set(outputs[1])


def test_a_longest_base_still_gives_a_name_sagemaker_accepts():
    base = "b" * MAX_BASE_NAME_LENGTH
    name = timestamped_job_name(base)
    assert len(name) <= api_limit("TrainingJobName", "max") and SAGEMAKER_NAME.fullmatch(name)
    assert re.fullmatch("b+" + SHAPE, name)
