"""Where a planned job runs: one interface (`base.Backend`), two places, one handle (`job.Job`).

base.py       the interface: plan, schedule, describe (SageMaker's statuses for both), logs, metrics, stop,
              artifacts; the status vocabulary
sagemaker.py  SageMaker, over cloud.submission and cloud.jobs
local.py      this machine, over the emulator (`run_local` in a thread of this process; `status.json`)
runs.py       local runs by name (a run directory, or runs/<name>/), light enough for every CLI call
job.py        the `Job` handle `orchestrator.run` returns for either, and `attach(name or run directory)`

It sits above both executors (it picks one) and below the notebook API and the command line.
"""
