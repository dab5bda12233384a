"""The one rule that tells slow from hung, for local runs and SageMaker jobs."""

from orchestrator.observing.liveness import HostActivity, Verdict, busy_hosts, idle_hosts, judge

BUSY = HostActivity("algo-1", True, "rank 0 at 97% CPU")
IDLE = HostActivity("algo-2", False, "0% CPU")
UNKNOWN = HostActivity("algo-3", None, "no metrics yet")


def test_a_job_that_spoke_within_the_timeout_is_moving_whatever_its_hosts_do():
    assert judge(299, 300, [IDLE]) is Verdict.MOVING


def test_a_silent_job_with_one_busy_host_is_slow_not_hung():
    assert judge(600, 300, [IDLE, BUSY]) is Verdict.SLOW


def test_a_silent_job_whose_every_host_is_idle_is_hung():
    assert judge(300, 300, [IDLE, HostActivity("algo-1", False)]) is Verdict.HUNG


def test_unknown_activity_is_never_taken_for_a_hang():
    assert judge(900, 300, [IDLE, UNKNOWN]) is Verdict.SLOW


def test_no_timeout_never_stalls():
    assert judge(10**6, None, [IDLE]) is Verdict.MOVING
    assert judge(10**6, 0, [IDLE]) is Verdict.MOVING


def test_busy_and_idle_hosts_partition_the_activities():
    assert busy_hosts([BUSY, IDLE, UNKNOWN]) == [BUSY, UNKNOWN]
    assert idle_hosts([BUSY, IDLE, UNKNOWN]) == [IDLE]
