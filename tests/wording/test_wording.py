"""orchestrator/wording.py: a count and a status as a person writes them (`smtrain plan` said `1 files`, `smtrain
tune status` `0 inprogress`)."""

from __future__ import annotations

from orchestrator.wording import counted, status_words


def test_a_count_takes_the_number_of_its_noun():
    assert [counted(1, "file"), counted(2, "file"), counted(0, "file")] == ["1 file", "2 files", "0 files"]
    assert [counted(1, "process"), counted(3, "process")] == ["1 process", "3 processes"]
    assert counted(2, "unverified", "unverified") == "2 unverified"



def test_a_status_is_written_as_words():
    assert [status_words(status) for status in ("InProgress", "NonRetryableError", "Completed")] == [
        "in progress", "non retryable error", "completed"]
