"""AWS: where a job goes (resolve), sending a plan (submission), reading jobs (jobs: the client behind the SageMaker backend, logs, metrics, job_liveness), the infra
stack, preflight checks, the optional SDK v2 adapter (estimator, sdk), and the one translator of AWS failures
(aws_errors). Everything that talks to AWS lives here."""
