"""A host order the job cannot have is refused with the flag the user gave: `--master-host algo-9` is no host
of a two-host job (not "an ordering" to "name at most once"), `--host-order` keeps its own message."""

from __future__ import annotations

import pytest

from orchestrator.emulator.preparing.prepared_run import _group_order
from orchestrator.emulator.run_options import Options
from orchestrator.errors import SpecError
from orchestrator.specs.words import SPEC_WORDS


def test_group_order_names_master_host_when_it_is_no_host():
    with pytest.raises(SpecError) as raised:
        _group_order(2, Options(master_host="algo-9"), SPEC_WORDS)
    assert str(raised.value).startswith("--master-host algo-9 is not a host of this job, which has algo-1, algo-2")
    assert "--master-host" in raised.value.fix and "at most once" not in raised.value.fix


def test_group_order_keeps_the_host_order_message():
    with pytest.raises(SpecError, match="host order algo-3, algo-1 is not an ordering of algo-1, algo-2"):
        _group_order(2, Options(host_order=("algo-3", "algo-1")), SPEC_WORDS)


def test_group_order_puts_the_master_host_first():
    assert _group_order(3, Options(master_host="algo-2"), SPEC_WORDS) == ["algo-2", "algo-1", "algo-3"]
