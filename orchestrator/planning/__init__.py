"""From a checked spec and a target to the plan: the job's name, the exact request, the SDK v2 arguments, the rank
table, the source tarball, the cost. Pure: no AWS call, no SDK."""
