"""Issue 31, a failure reason never calls torchrun's agent a rank: a traceback through the agent's own code (the
SIGTERM that stopped it, a rendezvous that timed out) is the agent's, named as such, and a rank's own report
leads over it; the same for a local run's logs and a SageMaker job's streams (one reader)."""

from __future__ import annotations

from orchestrator.observing.root_cause import TORCHRUN, FailureCause, Launcher, read_cause

SITE = "/opt/conda/lib/python3.11/site-packages/torch/distributed"
AGENT_TRACEBACK = f"""\
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "{SITE}/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
    return f(*args, **kwargs)
  File "{SITE}/run.py", line 919, in main
    run(args)
  File "{SITE}/run.py", line 910, in run
    elastic_launch(
  File "{SITE}/launcher/api.py", line 138, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
  File "{SITE}/launcher/api.py", line 260, in launch_agent
    result = agent.run()
  File "{SITE}/elastic/agent/server/api.py", line 709, in run
    result = self._invoke_run(role)
""".splitlines()
# algo-1 (ranks 0 and 1): smtrain stops the run after algo-2 failed; the agent reports its worker's SIGTERM and
# is stopped by one itself.
STOPPED_AGENT = [
    "Invoking script with the following command: torchrun --nnodes 2 --nproc_per_node 2 --master_addr algo-1 "
    "--master_port 7777 --node_rank 0 train.py",
    "W1126 17:37:40.380000 3 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, "
    "shutting down workers",
    "E1126 17:37:40.390000 3 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -15) "
    "local_rank: 1 (pid: 7) of binary: /opt/conda/bin/python",
    *AGENT_TRACEBACK,
    f'  File "{SITE}/elastic/multiprocessing/api.py", line 62, in _terminate_process_handler',
    '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 3 got signal: 15",
]
# algo-2 (ranks 2 and 3): rank 3 exits 1 without a word; torchrun's summary names it.
SILENT_RANK = """\
E1126 17:37:36.838000 3 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 6) of binary: /opt/conda/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-26_17:37:36
  host      : algo-2
  rank      : 3 (local_rank: 1)
  exitcode  : 1 (pid: 6)
============================================================""".splitlines()
RENDEZVOUS_TIMEOUT = [
    *AGENT_TRACEBACK,
    f'  File "{SITE}/elastic/rendezvous/static_tcp_rendezvous.py", line 55, in next_rendezvous',
    "    self._store = TCPStore(  # type: ignore[call-arg]",
    "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
]
TWO_HOSTS = Launcher(TORCHRUN, ("algo-1", "algo-2"), 2)


def test_the_stopped_agent_is_not_named_rank_1_and_the_rank_that_failed_leads():
    cause = read_cause({"algo-1": STOPPED_AGENT, "algo-2": SILENT_RANK}, TWO_HOSTS,
                       exit_codes={"algo-1": 1, "algo-2": 1})
    assert cause.headline() == "algo-2 (rank 3) exited with code 1"


def test_the_agents_own_error_is_named_as_the_agents_where_no_rank_said_anything():
    cause = read_cause({"algo-1": STOPPED_AGENT}, TWO_HOSTS, exit_codes={"algo-1": 1})
    assert cause.rank is None and cause.launcher == "torchrun agent"
    assert cause.headline() == ("algo-1 (torchrun agent) failed: torch.distributed.elastic.multiprocessing.api."
                                "SignalException: Process 3 got signal: 15")


def test_a_rendezvous_timeout_is_the_agents_and_survives_result_json():
    cause = read_cause({"algo-1": [], "algo-2": RENDEZVOUS_TIMEOUT}, TWO_HOSTS, exit_codes={"algo-2": 1})
    assert cause.headline() == ("algo-2 (torchrun agent) failed: torch.distributed.DistStoreError: Timed out after "
                                "901 seconds waiting for clients. 1/2 clients joined.")
    assert cause.category == "collective_timeout"
    assert FailureCause.from_dict(cause.to_dict()) == cause
