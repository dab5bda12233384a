"""A failed install as a cause (observing/root_cause.py), found in the toolkit's CloudWatch lines, its FailureReason
or a local run's install: pip's decisive line (observing/pip_failure.py, tested in test_pip_failure.py) as the
exception, the line of requirements.txt it points at, `pip install` as who failed."""

from __future__ import annotations

import pytest
from recorded_pip import (
    CHAINPKG_BUILD_DEPS,
    DECISIVE,
    DEEPPKG_NEEDS_TOPPKG,
    FLASH_ATTN_BUILD,
    FLASH_ATTN_FAILED,
    MYPKG_AS_A_DEPENDENCY_PIP_24,
    MYPKG_BUILD_DEPS_PIP_21,
    MYPKG_BUILD_DEPS_PIP_24,
    MYPKG_BUILD_DEPS_PIP_26,
    PIP_OUTPUT,
    TOPPKG_NEEDS_MISSING_DEP,
)
from recorded_sagemaker_logs import PYTHON, TORCHRUN_COMMAND, toolkit_failure, toolkit_start

from orchestrator.observing.root_cause import (
    PROCESS,
    TORCHRUN,
    Launcher,
    SourcePaths,
    install_cause,
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


def _install_failed_on_sagemaker(pip_output: str) -> list[str]:
    pip = "/opt/conda/bin/python3.11 -m pip install -r requirements.txt"
    before_the_command = toolkit_start(PYTHON, pip_output.splitlines())[:-5]  # the toolkit never invoked it
    return [*before_the_command, *toolkit_failure(1, pip, "InstallRequirementsError")]


BUILD_DEPS_OF_MYPKG = ("did not run successfully: ERROR: No matching distribution found for setuptools>=40.8.0")


@pytest.mark.parametrize(("output", "exception", "location"), [
    (MYPKG_BUILD_DEPS_PIP_21, "ERROR: No matching distribution found for mypkg==1.0", "requirements.txt"),
    (MYPKG_BUILD_DEPS_PIP_24, "error: subprocess-exited-with-error: mypkg==1.0: pip subprocess to install build "
                              f"dependencies {BUILD_DEPS_OF_MYPKG}", "requirements.txt:3"),
    (MYPKG_BUILD_DEPS_PIP_26, "error: subprocess-exited-with-error: mypkg: installing build dependencies for mypkg "
                              f"{BUILD_DEPS_OF_MYPKG}", "requirements.txt:3"),
])
def test_a_package_whose_build_dependencies_are_missing_is_the_cause_never_the_build_s_own_pip(
        output, exception, location):
    """The indented lines are the build's own pip installing mypkg's build dependencies. Before, the cause quoted
    that pip (`ERROR: No matching distribution found for setuptools>=40.8.0`) as if the user had written
    setuptools, while the location pointed at mypkg's line; now the cause is mypkg's, its step and what its build
    lacked, and a job this process did not submit still gets the line where pip said it (pip >= 23.1)."""
    cause = read_cause({"algo-1": _install_failed_on_sagemaker(output)}, Launcher(PROCESS, ("algo-1",)))
    assert (cause.exception, cause.location, cause.category) == (exception, location, "requirements_install")


def test_pip_s_word_on_the_line_wins_over_the_source_dir(tmp_path):
    """Where pip says which line it read (`Collecting mypkg==1.0 (from toppkg->-r requirements.txt (line 2))`), the
    location is that line, also where the source dir is here: it names the requirement that pulled in a failed
    dependency, which no line of the source dir names (before: `requirements.txt` alone), and the file as pip read
    it when the job ran, which the source dir may no longer be."""
    (tmp_path / "requirements.txt").write_text("okpkg\ntoppkg\n")
    here = SourcePaths.of(tmp_path)
    cause = read_cause({"algo-1": _install_failed_on_sagemaker(MYPKG_AS_A_DEPENDENCY_PIP_24)},
                       Launcher(PROCESS, ("algo-1",)), source=here)
    assert cause.location == f"{tmp_path}/requirements.txt:2"

    (tmp_path / "requirements.txt").write_text("mypkg==1.0\nokpkg\n")  # edited since the job ran
    assert install_cause("InstallRequirementsError", MYPKG_BUILD_DEPS_PIP_24.splitlines(), here).location \
        == f"{tmp_path}/requirements.txt:3"


def test_an_include_pip_names_is_a_file_of_the_source_dir_wherever_pip_ran():
    """pip 26 names an included file by its absolute path on the host (pip 23-25 as it was written): both are the
    source dir's `sub/other2.txt`, for a job this process did not submit too."""
    for said in ("sub/other2.txt", "/opt/ml/code/sub/other2.txt"):
        output = MYPKG_BUILD_DEPS_PIP_24.replace("(from -r requirements.txt (line 3))", f"(from -r {said} (line 1))")
        assert install_cause("InstallRequirementsError", output.splitlines()).location == "sub/other2.txt:1"


NO_INDEX_HAS_MISSING_DEP = "missing-dep>=2, which no index has (only 1.0)"
TOPPKG_NEEDS = f"toppkg needs {NO_INDEX_HAS_MISSING_DEP}"


@pytest.mark.parametrize(("output", "top", "where_pip_said"), [
    (TOPPKG_NEEDS_MISSING_DEP["22.0.4"], "toppkg", "requirements.txt"),
    (TOPPKG_NEEDS_MISSING_DEP["23.2.1"], "toppkg", "requirements.txt:3"),
    (TOPPKG_NEEDS_MISSING_DEP["24.2"], "toppkg", "requirements.txt:3"),
    (TOPPKG_NEEDS_MISSING_DEP["26.3"], "toppkg", "requirements.txt:3"),
    (DEEPPKG_NEEDS_TOPPKG["24.2"], "deeppkg", "requirements.txt:3"),
    (DEEPPKG_NEEDS_TOPPKG["26.3"], "deeppkg", "requirements.txt:3"),
])
def test_a_dependency_no_index_has_is_said_from_the_requirement_of_requirements_txt_that_needs_it(
        output, top, where_pip_said, tmp_path):
    """pip names only the dependency it found no distribution for (`No matching distribution found for
    missing-dep>=2`), which requirements.txt never names, and its parent (`(from toppkg)`), never the line. Before,
    the cause was pip's line about missing-dep at `requirements.txt` without a line; now it says which requirement
    of requirements.txt needed it, at that requirement's line: where pip said it read the parent (pip >= 23.1, a
    job this process did not submit too), else where the source dir names it (pip 22). Output recorded from real
    pip runs: tests/support/recorded_pip.py says how."""
    exception = TOPPKG_NEEDS if top == "toppkg" else f"deeppkg needs toppkg, which needs {NO_INDEX_HAS_MISSING_DEP}"
    fix = (f"require a version of {top} whose dependencies an index has, or add the index that has missing-dep to "
           "requirements.txt (`--extra-index-url URL`, a line of its own)")
    cause = read_cause({"algo-1": _install_failed_on_sagemaker(output)}, Launcher(PROCESS, ("algo-1",)))
    assert (cause.exception, cause.location, cause.category, cause.launcher, cause.fix) == (
        exception, where_pip_said, "requirements_install", "pip install", fix)

    (tmp_path / "requirements.txt").write_text(f"okpkg\n# the model code\n{top}\n")
    here = install_cause("InstallRequirementsError", output.splitlines(), SourcePaths.of(tmp_path))
    assert (here.exception, here.location, here.fix) == (exception, f"{tmp_path}/requirements.txt:3", fix)


def test_a_failure_reason_of_a_dependency_no_index_has_points_at_the_line_of_what_needed_it(tmp_path):
    """A job whose logs are gone has the toolkit's FailureReason: pip's stderr, whose first line follows
    `ErrorMessage "`. It names the parent there (`(from toppkg)`, pip 24); before, it was missed and the cause was
    pip's line about missing-dep at `requirements.txt` without a line."""
    errors = [line for line in TOPPKG_NEEDS_MISSING_DEP["24.2"].splitlines() if line.startswith("ERROR:")]
    reason = ('AlgorithmError: InstallRequirementsError:\nExitCode 1\nErrorMessage "' + "\n".join(errors) + '\n"\n'
              'Command "/opt/conda/bin/python3.11 -m pip install -r requirements.txt", exit code: 1')
    (tmp_path / "requirements.txt").write_text("okpkg\n# the model code\ntoppkg==1.0\n")
    cause = reported_install_cause({"FailureReason": reason}, SourcePaths.of(tmp_path))
    assert cause.headline() == f"the job (pip install) failed: {TOPPKG_NEEDS} at {tmp_path}/requirements.txt:3"


@pytest.mark.parametrize("pip", list(CHAINPKG_BUILD_DEPS))
def test_a_dependency_whose_build_lacks_its_build_dependencies_names_the_requirement_that_pulled_it_in(pip):
    """mypkg, an sdist whose build dependency no index has, is needed by midpkg, which chainpkg==1.0 (line 2)
    needs: the cause says so, with the step and the build's own pip's words, at line 2. Before, it named mypkg
    alone, which requirements.txt never does. The fix is the index's, which lacks the build tools (before: the
    advice for a build that failed). Output recorded from real pip runs (tests/support/recorded_pip.py)."""
    cause = read_cause({"algo-1": _install_failed_on_sagemaker(CHAINPKG_BUILD_DEPS[pip])},
                       Launcher(PROCESS, ("algo-1",)))
    step = ("mypkg: installing build dependencies for mypkg" if pip == "26.3"
            else "mypkg==1.0: pip subprocess to install build dependencies")
    assert (cause.exception, cause.location) == (
        f"error: subprocess-exited-with-error: chainpkg==1.0 needs midpkg, which needs {step} {BUILD_DEPS_OF_MYPKG}",
        "requirements.txt:2")
    assert cause.fix.startswith("the build of mypkg needs setuptools>=40.8.0, which the index pip reads lacks")
    assert "`--extra-index-url https://pypi.org/simple`" in cause.fix
