"""One name per signal, from the standard library: the names root_cause's table gave stay, and a number no table
held (a real-time signal, one out of the platform's range) still reads as something, never an error."""

from __future__ import annotations

import pytest

from orchestrator.observing.signal_names import signal_name


@pytest.mark.parametrize(("number", "name"), [(1, "SIGHUP"), (2, "SIGINT"), (4, "SIGILL"), (6, "SIGABRT"),
                                              (7, "SIGBUS"), (8, "SIGFPE"), (9, "SIGKILL"), (11, "SIGSEGV"),
                                              (13, "SIGPIPE"), (15, "SIGTERM")])
def test_the_signals_a_process_dies_of_keep_their_names(number, name):
    assert signal_name(number) == name


def test_a_number_without_a_name_is_described_or_numbered():
    assert signal_name(35) == "Real-time signal 1"  # SIGRTMIN + 1: glibc's words for it
    assert signal_name(99) == "signal 99"  # out of range: strsignal refuses it
