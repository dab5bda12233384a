"""SDK v2 as smtrain imports it: its config schema is checked once, and every document is still validated with
the error `jsonschema.validate` gives; its `logging.basicConfig` stays a no-op without disabling the user's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from orchestrator.cloud.sdk import import_sagemaker

GOOD = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}
BAD = {"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {"EnableNetworkIsolation": "yes"}}}


def test_each_reference_the_sdk_validates_through_checks_the_schema_once_and_every_document(monkeypatch):
    sagemaker = import_sagemaker()
    schema = sagemaker.config.config.SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA
    with pytest.raises(jsonschema.ValidationError) as expected:
        jsonschema.validate(BAD, schema)
    checked = []
    validator_class = jsonschema.validators.validator_for(schema)
    monkeypatch.setattr(validator_class, "check_schema", classmethod(lambda cls, schema: checked.append(schema)))
    for validate in (sagemaker.config.config.validate_sagemaker_config, sagemaker.config.validate_sagemaker_config,
                     sagemaker.utils.validate_sagemaker_config, sagemaker.session.validate_sagemaker_config):
        validate(GOOD)
        with pytest.raises(jsonschema.ValidationError) as raised:
            validate(BAD)
        assert (raised.value.message, list(raised.value.path)) == (expected.value.message, list(expected.value.path))
    assert checked == []
    # What the SDK's own loader of defaults files calls refuses a bad file as before.
    assert sagemaker.config.config.load_sagemaker_config.__globals__["validate_sagemaker_config"] is validate


@pytest.mark.slow  # a Python of its own, importing the SDK (seconds)
def test_the_sdk_leaves_the_root_logger_to_the_users_own_basic_config(tmp_path):
    # A fresh interpreter, as a notebook kernel is: a root logger without handlers. The SDK's `fit()` first
    # runs `check_and_get_run_experiment_config`, whose import of sagemaker.experiments calls basicConfig(INFO).
    script = textwrap.dedent("""
        import logging
        from orchestrator.cloud.sdk import import_sagemaker

        import_sagemaker().utils.check_and_get_run_experiment_config()
        print(logging.getLogger().handlers, logging.getLogger().level)
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
        logging.info("the user's line")
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                            timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[] 30\n"  # the SDK configured nothing: no handler, the root still at WARNING
    assert result.stderr == "INFO the user's line\n"
