"""pip's failed install as the reader finds it, in the toolkit's CloudWatch lines or its FailureReason: the cause
quotes pip's decisive line (`No matching distribution found`), never an informational one or its whole
`(from versions: ...)` list."""

from __future__ import annotations

from recorded_pip import DECISIVE, PIP_OUTPUT

from orchestrator.observing.root_cause import PROCESS, Launcher, install_cause, pip_failure_line, read_cause


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
