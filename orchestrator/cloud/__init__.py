"""AWS: where a job goes (resolve), sending a plan (submission), following jobs (jobs, logs), the infra stack,
and the optional SDK v2 adapter (estimator, sdk). Everything that talks to AWS lives here."""
