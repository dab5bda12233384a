"""pip's failed install of requirements.txt, as `smtrain local` recorded it (numpy==0.0.1, shortened), read for
its decisive line: the failure reason, the cause and its fix quote `No matching distribution found`, never pip's
informational `Ignored the following yanked versions` line, and never pip's whole `(from versions: ...)` list."""

from __future__ import annotations

from recorded_pip import DECISIVE, PIP_OUTPUT

from orchestrator.emulator.preparing.usercode import pip_error


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
