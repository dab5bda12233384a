"""What each emulated instance is given: the platform's config files and variables, its host name (an
LD_PRELOAD shim), its GPUs (or the CPU stand-in), and smtrain's cache on this machine the shim is built into."""
