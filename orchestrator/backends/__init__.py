"""Where a planned job runs: one interface (`base.Backend`), two places, one handle (`job.Job`).

base.py       the interface: plan, schedule, describe (SageMaker's statuses for both), logs, metrics, stop,
              artifacts; the status vocabulary
sagemaker.py  SageMaker, over cloud.submission and cloud.jobs' JobClient
local.py      this machine, over the emulator (`run_local` in a thread of this process; `status.json`)
runs.py       local runs by name (a run directory, or runs/<name>/), light enough for every CLI call
job.py        the one `Job` handle `run`, `submit` and `attach` return for either; `follow`, the one follow loop
resolve.py    which backend a job id names (`local:RUN`, `sagemaker:NAME`, `--backend`, a bare name): the one
              resolver of `attach` and every CLI verb

It sits above both executors (it picks one) and below the notebook API and the command line.
"""
