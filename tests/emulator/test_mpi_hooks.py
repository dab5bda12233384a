"""How a rank ended crosses from the MPI hook (standard library only, inside each emulated host) to the failure
reader through one pair of functions: what one writes, the other reads."""

from __future__ import annotations

from orchestrator.emulator.launching.mpi_hooks import rank_ends, record_rank_end


def test_each_ranks_recorded_ending_is_read_back_by_host_and_rank(tmp_path):
    folder = str(tmp_path / "rank-ends")
    record_rank_end(folder, "algo-1", 0, 14)
    record_rank_end(folder, "algo-2", 1, -9)
    (tmp_path / "rank-ends" / "2.json.part").write_text('{"host": "algo-2"')  # a record still being written
    (tmp_path / "rank-ends" / "notes.json").write_text("[]")
    assert rank_ends(folder) == {("algo-1", 0): 14, ("algo-2", 1): -9}


def test_a_run_whose_ranks_recorded_nothing_has_no_endings(tmp_path):
    assert rank_ends(str(tmp_path / "rank-ends")) == {}
