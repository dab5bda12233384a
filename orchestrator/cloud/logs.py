"""A training job's CloudWatch logs: every host's stream merged in time order, each line tagged with its host.

SageMaker writes one stream per host into the log group `/aws/sagemaker/TrainingJobs`, named
`<job>/algo-<N>-<epoch seconds>`. A `LogReader` remembers how far it has read each stream, so the same reader
serves a one-off dump (one `read_new()`) and a follow loop (`read_new()` after each poll); given a `tail`, its
first read starts at each stream's last lines, read from the end. Given a `host`, only that host's streams are
listed and read: one host of sixteen costs one host's GetLogEvents calls, not sixteen (CloudWatch throttles them).

Each stream's events pass through its own `redact.PrivateKeyLines`, so a private key a job printed over several
lines (several events) shows as one line saying it was hidden.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from typing import Any

from orchestrator.cloud.aws_errors import access_fix, aws_errors, denied_action, error_code
from orchestrator.cloud.log_escapes import as_printed
from orchestrator.errors import AwsError
from orchestrator.observing.cause_window import Window
from orchestrator.observing.log_lines import LogLine, host_order
from orchestrator.observing.plain_text import plain
from orchestrator.observing.rank_lines import RankLines
from orchestrator.redact import MAX_PRIVATE_KEY_LINES, PrivateKeyLines
from orchestrator.wording import counted

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
_STREAM_SUFFIX = re.compile(r"(?P<host>.+)-\d{10}")
MAX_EVENTS_PER_CALL = 10_000
"""GetLogEvents' largest `limit`: CloudWatch refuses a larger one (InvalidParameterException)."""
LOG_READS = ("logs:DescribeLogStreams", "logs:GetLogEvents")
"""What reading a job's logs takes: its streams listed, then each read."""
CAUSE_MOST_CALLS = 10
"""GetLogEvents calls per stream at most while a failed job's streams are searched backward for the error that
started the failure (`observing.cause_window`): its last 100,000 events, at most 10 MB."""


def why_unread(error: AwsError) -> tuple[str, str | None]:
    """Why a job's logs could not be read, short enough for a status row, and what to do: a refused read names the
    permission (with the other read smtrain makes, so one change allows both); any other failure in AWS's words."""
    action = denied_action(error.message)
    if action is None:
        return error.message, error.fix
    needed = " and ".join(dict.fromkeys((action, *LOG_READS))) if action.startswith("logs:") else action
    return f"your credentials were refused {action}", access_fix(needed)


def host_of(stream_name: str, job_name: str) -> str:
    """`job/algo-2-1700000000` -> `algo-2`."""
    rest = stream_name.removeprefix(f"{job_name}/")
    match = _STREAM_SUFFIX.fullmatch(rest)
    return match["host"] if match else rest


class LogReader:
    """Reads the events of a job's streams not read before, including streams that appeared since."""

    def __init__(self, logs_client: Any, job_name: str, mask: Callable[[str], str] = str,
                 tail: int | None = None, host: str | None = None) -> None:
        """`tail`: the first read gives each stream's last `tail` lines, read from its end (a stream of
        gigabytes is not paged through from its start); a stream that appears later is read from its start.
        `host`: only that host's streams (e.g. "algo-2"); every host's when None."""
        self._client = logs_client
        self._job_name = job_name
        self._mask = mask
        self._tail = tail
        self._host = host
        self._tokens: dict[str, str | None] = {}
        self._keys: dict[str, PrivateKeyLines] = {}
        """Per stream, kept between reads: a key whose lines a follow reads in two polls is hidden whole."""

    def read_new(self) -> list[LogLine]:
        """Every host's (or the one host's) new events, merged by timestamp (hosts in algo-N order on ties)."""
        with aws_errors(f"reading the logs of {self._job_name}"):
            for stream in stream_names(self._client, self._job_name, self._host):
                self._tokens.setdefault(stream, None)
            streams = sorted(self._tokens, key=self._host_order)
            tail = self._tail
            read = [self._read_stream(stream) if tail is None else self._read_last(stream, tail)
                    for stream in streams]
            lines = list(heapq.merge(*read, key=lambda line: line.timestamp_ms))
        self._tail = None
        return lines

    def _read_last(self, stream: str, tail: int) -> list[LogLine]:
        """The stream's last `tail` lines; the next read goes on from the token after them. As `tail()`,
        MAX_PRIVATE_KEY_LINES more are read before them, so that a key begun before them is still hidden
        whole; a key still open at the end stays open in the stream's `PrivateKeyLines` for the next reads."""
        keys = self._keys.setdefault(stream, PrivateKeyLines(self._mask))
        events, self._tokens[stream] = _last_events(self._client, stream, tail + MAX_PRIVATE_KEY_LINES)
        return _shown(host_of(stream, self._job_name), events, keys)[-tail:]

    def _read_stream(self, stream: str) -> list[LogLine]:
        """Pages forward from the remembered token; CloudWatch returns the same token once at the end."""
        host = host_of(stream, self._job_name)
        token = self._tokens[stream]
        keys = self._keys.setdefault(stream, PrivateKeyLines(self._mask))
        events = []
        while True:
            page = self._client.get_log_events(
                logGroupName=LOG_GROUP,
                logStreamName=stream,
                startFromHead=True,
                **({"nextToken": token} if token else {}),
            )
            events += page["events"]
            if page["nextForwardToken"] == token:
                break
            token = page["nextForwardToken"]
        self._tokens[stream] = token
        return _shown(host, events, keys)

    def _host_order(self, stream: str) -> tuple[int, str]:
        return host_order(host_of(stream, self._job_name)), stream


def stream_names(logs_client: Any, job_name: str, host: str | None = None) -> list[str]:
    """The job's streams, one per host and start (a restarted spot job gets new ones); only `host`'s when given,
    listed by the prefix `<job>/<host>-` and then kept by exact host, so that algo-1 never gets algo-10's."""
    from botocore.exceptions import ClientError

    prefix = f"{job_name}/{host}-" if host else f"{job_name}/"
    paginator = logs_client.get_paginator("describe_log_streams")
    try:
        return [
            stream["logStreamName"]
            for page in paginator.paginate(logGroupName=LOG_GROUP, logStreamNamePrefix=prefix)
            for stream in page["logStreams"]
            if host is None or host_of(stream["logStreamName"], job_name) == host
        ]
    except ClientError as exc:
        # The log group only exists once some job in the region has logged; until then there is nothing.
        if error_code(exc) == "ResourceNotFoundException":
            return []
        raise


def tail(logs_client: Any, job_name: str, lines: int = 100, mask: Callable[[str], str] = str,
         host: str | None = None) -> dict[str, list[LogLine]]:
    """The last `lines` log lines of each host (only `host`'s when given), oldest first, hosts in algo-N order: one
    GetLogEvents call per stream, read from the end, however long the job has run. MAX_PRIVATE_KEY_LINES more are
    read before them, so that a private key whose BEGIN line lies before the last lines is still hidden whole."""
    return StreamEnds(logs_client, job_name, mask, host=host).last(lines).tails


class StreamEnds:
    """Each host's streams of a job read from their ends backwards, as far as the last lines asked need, keeping
    what they read: a larger window after a smaller one (`observing.cause_window`) reads only the events before
    it. `most_calls`: GetLogEvents calls per stream at most (None: as many as the lines need)."""

    def __init__(self, logs_client: Any, job_name: str, mask: Callable[[str], str] = str,
                 most_calls: int | None = None, host: str | None = None) -> None:
        self._job_name = job_name
        self._mask = mask
        self._most_calls = most_calls
        with aws_errors(f"reading the logs of {job_name}"):
            self._ends = [_StreamEnd(logs_client, stream) for stream in stream_names(logs_client, job_name, host)]

    def last(self, lines: int) -> Window:
        """Each host's last `lines` lines (and MAX_PRIVATE_KEY_LINES more read before them, so that a private key
        whose BEGIN line lies before them is still hidden whole)."""
        asked = lines + MAX_PRIVATE_KEY_LINES
        with aws_errors(f"reading the logs of {self._job_name}"):
            for end in self._ends:
                end.read_back(asked, self._most_calls)
        by_host: dict[str, list[LogLine]] = {}
        for end in self._ends:
            stream_host = host_of(end.stream, self._job_name)
            keys = PrivateKeyLines(self._mask)
            shown = _shown(stream_host, end.events, keys)
            if end.events:  # a key still open at the stream's end (the job may still be printing it)
                shown += [LogLine(stream_host, end.events[-1]["timestamp"], marker) for marker in keys.end()]
            by_host.setdefault(stream_host, []).extend(shown)
        cut = [end for end in self._ends if not end.at_start and len(end.events) < asked]  # its calls are spent
        earlier = any(not end.at_start and end not in cut for end in self._ends)
        bound = "; ".join(f"the last {counted(len(end.events), 'event')} of {host_of(end.stream, self._job_name)}'s "
                          "CloudWatch stream" for end in cut)
        return Window({each: sorted(by_host[each], key=lambda line: line.timestamp_ms)[-lines:]
                       for each in sorted(by_host, key=host_order)},
                      earlier or any(len(shown) > lines for shown in by_host.values()), bound or None)


def _shown(host: str, events: list[dict[str, Any]], keys: PrivateKeyLines) -> list[LogLine]:
    """A stream's events as lines: as the job printed them (`log_escapes`: SageMaker writes a carriage return as
    `#015`), then plain text (`plain_text`: a progress bar's carriage returns are line breaks), each line of an event
    a line of its own, as a local run's are, each MPI rank's line whole (`rank_lines`, at the time of the event that
    ends it; what a rank left unended by the last event at that event's), then masked, a secret that a rank wrote in
    pieces too, a private key's lines replaced by the one line that says so."""
    ranks = RankLines()
    whole = [(event["timestamp"], line) for event in events
             for text in plain(as_printed(event["message"].rstrip("\n"))).split("\n") for line in ranks.line(text)]
    whole += [(events[-1]["timestamp"], line) for line in ranks.end()]
    return [LogLine(host, stamp, text) for stamp, line in whole if (text := keys.line(line)) is not None]


_PAGE_BYTES = 1_048_576
"""What one GetLogEvents page holds at most: each event's UTF-8 message and 26 bytes more."""
_EVENT_BYTES = 262_144
"""The largest event CloudWatch takes (256 KB with its 26 bytes)."""


def _maybe_cut(events: list[dict[str, Any]]) -> bool:
    """Whether a page with fewer events than asked may have been cut at 1 MB rather than reached the stream's
    start: the next event might not have fit in what it left."""
    return sum(len(event["message"].encode()) + 26 for event in events) > _PAGE_BYTES - _EVENT_BYTES


def _last_events(logs_client: Any, stream: str, count: int) -> tuple[list[dict[str, Any]], str | None]:
    """The last `count` events of a stream, oldest first (`_StreamEnd`), with the first call's forward token, from
    which a forward read goes on after the last event (None for an empty stream, which a forward read then reads
    from its start)."""
    end = _StreamEnd(logs_client, stream)
    end.read_back(count)
    return end.events, end.forward if end.events else None


class _StreamEnd:
    """A stream read from its end backwards: one GetLogEvents call from its end, and further ones backward while
    events are missing (more than MAX_EVENTS_PER_CALL asked, or a page cut at 1 MB of long lines) until the
    stream's start, where the backward token comes back unchanged; what was read is kept for a later, larger read."""

    def __init__(self, logs_client: Any, stream: str) -> None:
        self.stream = stream
        self.events: list[dict[str, Any]] = []
        self.forward: str | None = None
        self.calls = 0
        self.at_start = False
        self._client = logs_client
        self._token: str | None = None

    def read_back(self, count: int, most_calls: int | None = None) -> None:
        """Reads on backward until `count` events are held, the stream's start, or `most_calls` calls in all."""
        while len(self.events) < count and not self.at_start and (most_calls is None or self.calls < most_calls):
            limit = min(count - len(self.events), MAX_EVENTS_PER_CALL)
            page = self._client.get_log_events(logGroupName=LOG_GROUP, logStreamName=self.stream,
                                               startFromHead=False, limit=limit,
                                               **({"nextToken": self._token} if self._token else {}))
            self.calls += 1
            self.events = page["events"] + self.events
            self.forward = self.forward or page["nextForwardToken"]
            short = len(page["events"]) < limit and not _maybe_cut(page["events"])
            self.at_start = short or not page["events"] or page["nextBackwardToken"] == self._token
            self._token = page["nextBackwardToken"]
