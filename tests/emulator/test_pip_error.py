"""pip's failed install of requirements.txt, as `smtrain local` recorded it (numpy==0.0.1, shortened), read for
its decisive line: the failure reason, the cause and its fix quote `No matching distribution found`, never pip's
informational `Ignored the following yanked versions` line, and never pip's whole `(from versions: ...)` list."""

from __future__ import annotations

import pytest
from recorded_pip import (
    CHAINPKG_BUILD_DEPS,
    DECISIVE,
    DEEPPKG_NEEDS_TOPPKG,
    FLASH_ATTN_BUILD,
    FLASH_ATTN_FAILED,
    MYPKG_BUILD_DEPS_PIP_24,
    MYPKG_BUILD_DEPS_PIP_26,
    PIP_OUTPUT,
    TOPPKG_NEEDS_MISSING_DEP,
)

from orchestrator.emulator.preparing.usercode import pip_error
from orchestrator.observing.root_cause import install_cause


def test_pip_error_quotes_the_decisive_line():
    assert pip_error(PIP_OUTPUT) == DECISIVE


def test_pip_error_without_no_matching_quotes_could_not_find_with_its_versions_shortened():
    output = "\n".join(line for line in PIP_OUTPUT.splitlines() if "No matching" not in line)
    said = pip_error(output)
    assert said == ("ERROR: Could not find a version that satisfies the requirement numpy==0.0.1 (from versions: "
                    "1.3.0, 1.4.1, 1.5.0, ..., 2.4.4, 2.4.5, 2.4.6; 90 in all)")


def test_pip_error_of_another_failure_is_its_last_error_line():
    output = "ERROR: Ignored the following yanked versions: 2.4.0\nERROR: something pip has not said before\n"
    assert pip_error(output) == "ERROR: something pip has not said before"


@pytest.mark.parametrize(("output", "said"), [
    (MYPKG_BUILD_DEPS_PIP_24, "error: subprocess-exited-with-error: mypkg==1.0: pip subprocess to install build "
                              "dependencies did not run successfully: ERROR: No matching distribution found for "
                              "setuptools>=40.8.0"),
    (MYPKG_BUILD_DEPS_PIP_26, "error: subprocess-exited-with-error: mypkg: installing build dependencies for mypkg "
                              "did not run successfully: ERROR: No matching distribution found for setuptools>=40.8.0"),
    (CHAINPKG_BUILD_DEPS["24.2"], "error: subprocess-exited-with-error: chainpkg==1.0 needs midpkg, which needs "
                                  "mypkg==1.0: pip subprocess to install build dependencies did not run "
                                  "successfully: ERROR: No matching distribution found for setuptools>=40.8.0"),
    (FLASH_ATTN_BUILD, FLASH_ATTN_FAILED),
    (TOPPKG_NEEDS_MISSING_DEP["24.2"], "toppkg needs missing-dep>=2, which no index has (only 1.0)"),
    (DEEPPKG_NEEDS_TOPPKG["26.3"], "deeppkg needs toppkg, which needs missing-dep>=2, which no index has (only 1.0)"),
])
def test_a_local_run_s_reason_says_what_the_sagemaker_job_s_cause_says(output, said):
    """A local run's failure reason and a SageMaker job's cause read the same pip output alike. Before, the local
    reason quoted pip's first `×` block alone: `pip subprocess to install build dependencies did not run
    successfully.: ERROR: No matching distribution found for setuptools>=40.8.0` (pip 24) never named mypkg, the
    package whose build lacked setuptools, nor the requirement that pulled it in; a dependency no index has was
    pip's line about missing-dep, never toppkg, the requirement written in requirements.txt."""
    assert pip_error(output) == said == install_cause("InstallRequirementsError", output.splitlines()).exception
