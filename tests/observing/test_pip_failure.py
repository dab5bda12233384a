"""pip's output of a failed install read on its own (observing/pip_failure.py): the line a cause quotes and the fix
it gives, from output recorded from real pip runs (tests/support/recorded_pip.py). How a cause places them (host,
line of requirements.txt) is test_install_cause.py's."""

from __future__ import annotations

import pytest
from recorded_pip import (
    CHAINPKG_BUILD_DEPS,
    DECISIVE,
    FLASH_ATTN_BUILD,
    FLASH_ATTN_FAILED,
    MYPKG_BUILD_DEPS_PIP_24,
    MYPKG_BUILD_DEPS_PIP_26,
    PIP_OUTPUT,
    TOPPKG_NEEDS_MISSING_DEP,
    VERSIONS,
)

from orchestrator.observing.pip_failure import (
    installs_requirements_txt,
    pip_failure_line,
    pip_fix,
    toolkit_install_failed,
)

PIP_COMMAND = "/opt/conda/bin/python3.11 -m pip install -r requirements.txt"


def test_pip_failure_line_keeps_a_short_version_list_whole():
    line = "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0, 1.1, 2.0)"
    assert pip_failure_line([line]) == line


def test_pip_failure_line_is_the_decisive_line_never_an_informational_one_and_cuts_a_long_version_list():
    assert pip_failure_line(PIP_OUTPUT.splitlines()) == DECISIVE
    line = f"ERROR: Could not find a version that satisfies the requirement numpy==0.0.1 (from versions: {VERSIONS})"
    assert pip_failure_line([line]) == ("ERROR: Could not find a version that satisfies the requirement numpy==0.0.1 "
                                        "(from versions: 1.3.0, 1.4.1, 1.5.0, ..., 2.4.4, 2.4.5, 2.4.6; 90 in all)")


@pytest.mark.parametrize("output", [MYPKG_BUILD_DEPS_PIP_24, MYPKG_BUILD_DEPS_PIP_26, *CHAINPKG_BUILD_DEPS.values()])
def test_a_build_that_lacks_its_build_dependencies_is_the_package_s_failure_never_the_build_s_own_pip(output):
    """The indented `No matching distribution found for setuptools>=40.8.0` is the build environment's pip: the
    line names the package pip built (from what requirements.txt names) and its step first."""
    said = pip_failure_line(output.splitlines())
    assert said.startswith("error: subprocess-exited-with-error: ")
    assert "mypkg" in said.split("build dependencies")[0]
    assert said.endswith("did not run successfully: ERROR: No matching distribution found for setuptools>=40.8.0")


def test_a_build_that_failed_on_its_own_gets_the_wheel_and_no_build_isolation_advice():
    lines = FLASH_ATTN_BUILD.splitlines()
    assert pip_failure_line(lines) == FLASH_ATTN_FAILED
    assert "require a version with a wheel" in pip_fix(lines)
    assert "`pip install --no-build-isolation`" in pip_fix(lines)


def test_a_dependency_no_index_has_is_said_and_fixed_from_the_requirement_that_needs_it():
    lines = TOPPKG_NEEDS_MISSING_DEP["24.2"].splitlines()
    assert pip_failure_line(lines) == "toppkg needs missing-dep>=2, which no index has (only 1.0)"
    assert pip_fix(lines) == ("require a version of toppkg whose dependencies an index has, or add the index that has "
                              "missing-dep to requirements.txt (`--extra-index-url URL`, a line of its own)")


def test_a_requirement_no_index_has_is_pinned_anew():
    assert pip_fix(PIP_OUTPUT.splitlines()) == (
        "pip could not install the source dir's requirements.txt (No matching distribution found for "
        "numpy==0.0.1): pin versions that exist for the image's Python, or drop packages the image already ships")


def test_a_pip_error_is_the_toolkit_s_install_only_where_the_toolkit_never_invoked_the_script():
    """A script that runs pip itself and fails is the script's failure, with its rank: the toolkit invoked it."""
    install = [f"Installing dependencies from requirements.txt: {PIP_COMMAND}", DECISIVE,
               "sagemaker_training.errors.InstallRequirementsError: InstallRequirementsError:"]
    assert toolkit_install_failed(DECISIVE, install)
    assert not toolkit_install_failed(DECISIVE, [*install, "Invoking script with the following command:"])
    assert not toolkit_install_failed("ValueError: bad shape", install)
    assert installs_requirements_txt(install)
    assert not installs_requirements_txt(["/opt/conda/bin/python3.11 -m pip install . "])


@pytest.mark.parametrize("output", [MYPKG_BUILD_DEPS_PIP_24, MYPKG_BUILD_DEPS_PIP_26, *CHAINPKG_BUILD_DEPS.values()])
def test_a_build_dependency_the_index_lacks_is_fixed_at_the_index_not_the_build(output):
    """The sdist's build could not even start: the build environment's pip found no setuptools on the index pip
    reads (a private `--index-url` that holds the user's packages but not the build tools). Before, the fix gave
    the advice for a build that failed (a version with a wheel, `--no-build-isolation`), which cannot help: the
    build tools have to come from an index."""
    fix = pip_fix(output.splitlines())
    assert fix == ("the build of mypkg needs setuptools>=40.8.0, which the index pip reads lacks (a private index, as "
                   "`--index-url` in requirements.txt names one): add `--extra-index-url https://pypi.org/simple` to "
                   "requirements.txt (a line of its own), or mirror setuptools and wheel on that index, or require a "
                   "version of mypkg that has a wheel")
    assert "--no-build-isolation" not in fix
