"""pip's failed install as the reader finds it, in the toolkit's CloudWatch lines or its FailureReason: the cause
quotes pip's decisive line (`No matching distribution found`), never an informational one or its whole
`(from versions: ...)` list."""

from __future__ import annotations

from recorded_pip import DECISIVE, FLASH_ATTN_BUILD, FLASH_ATTN_FAILED, PIP_OUTPUT
from recorded_sagemaker_logs import PYTHON, TORCHRUN_COMMAND, toolkit_failure, toolkit_start

from orchestrator.observing.root_cause import (
    PROCESS,
    TORCHRUN,
    Launcher,
    SourcePaths,
    install_cause,
    pip_failure_line,
    read_cause,
    reported_install_cause,
)


def test_read_cause_of_a_toolkit_log_quotes_the_decisive_pip_line():
    lines = ["Installing dependencies from requirements.txt:", *PIP_OUTPUT.splitlines(),
             "sagemaker_training.errors.InstallRequirementsError: InstallRequirementsError:", "ExitCode 1"]
    cause = read_cause({"algo-1": lines}, Launcher(PROCESS, ("algo-1",)))
    assert (cause.exception, cause.category) == (DECISIVE, "requirements_install")
    assert "from versions" not in cause.fix


def test_install_cause_names_the_decisive_line_in_cause_fix_and_headline():
    cause = install_cause("InstallRequirementsError", PIP_OUTPUT.splitlines())
    assert cause.exception == DECISIVE
    assert "(No matching distribution found for numpy==0.0.1)" in cause.fix
    assert all(len(text) < 400 for text in (cause.exception, cause.fix, cause.headline()))


def test_an_install_no_host_is_named_for_is_said_as_a_host_s_install_is(tmp_path):
    """A local run installs once for all its hosts, and SageMaker's FailureReason names no host: the cause is pip's,
    as a host's failed install in its log is (`launcher: "pip install"`, pip's own line), at the line of
    requirements.txt where the source dir is here. Before: `the job failed: InstallRequirementsError: ERROR: ...`,
    `launcher` null, no location."""
    (tmp_path / "requirements.txt").write_text("# pinned\nnumpy==0.0.1\n")
    cause = install_cause("InstallRequirementsError", PIP_OUTPUT.splitlines(), SourcePaths.of(tmp_path))
    assert (cause.host, cause.rank, cause.launcher) == (None, None, "pip install")
    assert cause.headline() == f"the job (pip install) failed: {DECISIVE} at {tmp_path}/requirements.txt:2"

    reason = 'AlgorithmError: InstallRequirementsError:\nExitCode 1\nErrorMessage "ERROR: Could not find a version ' \
             f'that satisfies the requirement numpy==0.0.1 (from versions: none)\n{DECISIVE}\n"\n' \
             'Command "/opt/conda/bin/python3.11 -m pip install -r requirements.txt", exit code: 1'
    reported = reported_install_cause({"FailureReason": reason})
    assert reported.headline() == f"the job (pip install) failed: {DECISIVE} at requirements.txt"


def test_pip_failure_line_keeps_a_short_version_list_whole():
    line = "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0, 1.1, 2.0)"
    assert pip_failure_line([line]) == line


def test_a_package_whose_build_fails_under_pip_is_the_install_not_an_import_error_of_the_script():
    """pip >= 22 prints no `ERROR:` line for a failed build, and the build's own traceback, indented, ends in
    `ModuleNotFoundError: No module named 'torch'`. Before, the cause was `error: subprocess-exited-with-error` or
    `error: metadata-generation-failed` (taken for a traceback's last line) with no fix, under torchrun; now it is
    the build that failed, with pip's fix, and never the image's `torch` missing from the script."""
    pip = "/opt/conda/bin/python3.11 -m pip install -r requirements.txt"
    for launcher, command in ((Launcher(PROCESS, ("algo-1",)), PYTHON),
                              (Launcher(TORCHRUN, ("algo-1",), 4), TORCHRUN_COMMAND.format(node=0))):
        lines = [*toolkit_start(command, FLASH_ATTN_BUILD.splitlines()),
                 *toolkit_failure(1, pip, "InstallRequirementsError")]
        cause = read_cause({"algo-1": lines}, launcher, framework_version="2.3.0")
        assert (cause.exception, cause.category) == (FLASH_ATTN_FAILED, "requirements_install")
        assert "--no-build-isolation" in cause.fix
