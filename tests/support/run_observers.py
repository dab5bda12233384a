"""Observers of run_local (`emulator.local_run.RunObserver`) that tests of several packages hand a run."""

from __future__ import annotations


class NoticeRecorder:
    """An observer of run_local that keeps the notices a run prints (`notices`) and ignores the rest."""

    def __init__(self) -> None:
        self.notices: list[str] = []

    def notice(self, text: str) -> None:
        self.notices.append(text)

    def started(self, *args) -> None:
        pass

    def line(self, *args) -> None:
        pass

    def progress(self, *args) -> None:
        pass

    def attempt(self, *args) -> None:
        pass
