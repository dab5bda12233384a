"""The free text in SageMaker's answers as smtrain holds it: every FailureReason and StatusMessage plain, then masked.

That text quotes the job: the toolkit's FailureReason carries the script's last error and its command line
(`ValueError: bad token hf_...`, `--api-key XYZ`), a status message what the job printed. So an answer is cleaned
where smtrain reads it (a training job's description, a tuning job's, its trials' list; a local run's status.json,
written in the same words), before its status, the failure reader, a trial table, `-o json` or the Python API see
it: one rule for every such text, the one a training job's failure reason always had. Plain first (terminal
controls removed, invisible characters shown: observing/plain_text.py), masked after (redact.mask_text: the job's
own secret values, and every secret-looking flag, variable or credential whatever the job), so neither can split
a secret out of masking's sight.
"""

from __future__ import annotations

from typing import Any

from orchestrator.observing.plain_text import plain
from orchestrator.redact import mask_text, secret_values

FREE_TEXT = frozenset({"FailureReason", "StatusMessage"})
"""The members of DescribeTrainingJob, DescribeHyperParameterTuningJob and their trials' summaries (at any depth:
a transition's StatusMessage, the best trial's FailureReason) that hold text the job or SageMaker wrote."""


def shown_answer(answer: Any, secrets: frozenset[str]) -> Any:
    """A copy of `answer` with each FREE_TEXT member plain and masked for `secrets` (and every secret-looking
    value); the rest as it was."""
    if isinstance(answer, dict):
        return {key: mask_text(plain(value), secrets) if key in FREE_TEXT and isinstance(value, str)
                else shown_answer(value, secrets) for key, value in answer.items()}
    if isinstance(answer, list):
        return [shown_answer(item, secrets) for item in answer]
    return answer


def shown_training_job(described: dict[str, Any]) -> dict[str, Any]:
    """A DescribeTrainingJob answer (or a local run's status.json) with its free text shown, masked for the secret
    values of its own environment and hyperparameters: what smtrain knows of the spec from a job's name alone."""
    return shown_answer(described, training_job_secrets(described))


def training_job_secrets(described: dict[str, Any]) -> frozenset[str]:
    """The secret values a DescribeTrainingJob answer holds: its environment's and hyperparameters'."""
    return secret_values(described.get("Environment", {}), described.get("HyperParameters", {}))
