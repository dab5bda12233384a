"""`smtrain check`'s checks (cloud/preflight.py) where no moto server answers: what a check says when AWS cannot
be reached at all."""

from __future__ import annotations

import boto3

from orchestrator.cloud.preflight import run_checks


def test_an_unreachable_sts_is_a_network_problem_not_missing_credentials(monkeypatch):
    """Offline, with credentials configured, the fix said `run aws configure`: the credentials were never asked."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")

    credentials = run_checks(None, boto3.Session(region_name="us-east-1"))[0]

    assert (credentials.name, credentials.ok) == ("credentials", False)
    assert "Could not connect to the endpoint URL" in credentials.detail
    assert credentials.fix == "check the network, the region and AWS_ENDPOINT_URL"
