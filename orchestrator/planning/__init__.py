"""From a checked spec and a target to the plan: the exact request, the rank table, the source tarball, the cost.
Pure: no AWS call, no SDK."""
