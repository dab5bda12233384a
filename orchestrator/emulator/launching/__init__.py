"""How each host's processes start: the toolkit's launchers built as the toolkit builds them, then adapted to one
machine (loopback, Open MPI hooks, a mount namespace per host for its /opt/ml)."""
