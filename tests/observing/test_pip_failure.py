"""pip's failed install as the reader finds it, in the toolkit's CloudWatch lines or its FailureReason: the cause
quotes pip's decisive line (`No matching distribution found`), never an informational one or its whole
`(from versions: ...)` list."""

from __future__ import annotations

from orchestrator.observing.root_cause import PROCESS, Launcher, install_cause, pip_failure_line, read_cause

# What pip printed for numpy==0.0.1 in requirements.txt (recorded by `smtrain local`, shortened).
VERSIONS = "1.3.0, 1.4.1, 1.5.0, 1.6.0, 1.6.1, 1.6.2, 1.6.3, 1.7.0, 1.7.1, 1.7.2, 1.7.3, 1.8.0, 1.8.1, 1.8.2, 1.8.3, 1.9.0, 1.9.1, 1.9.2, 1.9.3, 1.10.0, 1.10.1, 1.10.2, 1.10.3, 1.11.0, 1.11.1, 1.11.2, 1.11.3, 1.12.0, 1.12.1, 1.12.2, 1.12.3, 1.13.0, 1.13.1, 1.13.2, 1.13.3, 1.14.0, 1.14.1, 1.14.2, 1.14.3, 1.15.0, 1.15.1, 1.15.2, 1.15.3, 1.16.0, 1.16.1, 1.16.2, 1.16.3, 1.17.0, 1.17.1, 1.17.2, 1.17.3, 1.18.0, 1.18.1, 1.18.2, 1.18.3, 1.19.0, 1.19.1, 1.19.2, 1.19.3, 1.20.0, 1.20.1, 1.20.2, 1.20.3, 1.21.0, 1.21.1, 1.21.2, 1.21.3, 1.22.0, 1.22.1, 1.22.2, 1.22.3, 1.23.0, 1.23.1, 1.23.2, 1.23.3, 1.24.0, 1.24.1, 1.24.2, 1.24.3, 1.25.0, 1.25.1, 1.25.2, 1.25.3, 1.26.0, 1.26.1, 1.26.2, 1.26.3, 2.4.4, 2.4.5, 2.4.6"
PIP_OUTPUT = f"""\
Looking in indexes: https://pypi.org/simple
ERROR: Ignored the following yanked versions: 2.4.0
ERROR: Ignored the following versions that require a different python version: 1.21.2 Requires-Python >=3.7,<3.11
ERROR: Could not find a version that satisfies the requirement numpy==0.0.1 (from versions: {VERSIONS})
ERROR: No matching distribution found for numpy==0.0.1
"""
DECISIVE = "ERROR: No matching distribution found for numpy==0.0.1"


def test_read_cause_of_a_toolkit_log_quotes_the_decisive_pip_line():
    lines = ["Installing dependencies from requirements.txt:", *PIP_OUTPUT.splitlines(),
             "sagemaker_training.errors.InstallRequirementsError: InstallRequirementsError:", "ExitCode 1"]
    cause = read_cause({"algo-1": lines}, Launcher(PROCESS, ("algo-1",)))
    assert (cause.exception, cause.category) == (DECISIVE, "requirements_install")
    assert "from versions" not in cause.fix


def test_install_cause_names_the_decisive_line_in_cause_fix_and_headline():
    cause = install_cause("InstallRequirementsError", PIP_OUTPUT.splitlines())
    assert cause.exception == f"InstallRequirementsError: {DECISIVE}"
    assert "(No matching distribution found for numpy==0.0.1)" in cause.fix
    assert all(len(text) < 400 for text in (cause.exception, cause.fix, cause.headline()))


def test_pip_failure_line_keeps_a_short_version_list_whole():
    line = "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0, 1.1, 2.0)"
    assert pip_failure_line([line]) == line
