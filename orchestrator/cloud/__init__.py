"""AWS: where a job goes (resolve), sending a plan (submission), following jobs (jobs, logs, metrics), the infra
stack, preflight checks, the optional SDK v2 adapter (estimator, sdk), and the one translator of AWS failures
(aws_errors). Everything that talks to AWS lives here."""
