"""Every process of an emulated host sees its host name, as in the container.

The DLC starts the toolkit through `start_with_right_hostname.sh`, which LD_PRELOADs a library whose
gethostname() answers the host's name (algo-N), and the toolkit's mpirun exports it to every rank. The
emulator does the same with `gethostname.c`, compiled here once per machine with the C compiler; the name comes
from SMTRAIN_HOSTNAME in each host's environment. Without a compiler, processes see this machine's name and the
run says so once.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from orchestrator.emulator.instances.cache import cached_directory

HOSTNAME_VARIABLE = "SMTRAIN_HOSTNAME"
SOURCE = Path(__file__).with_name("gethostname.c")
LIBRARY_NAME = "libsmtrain-gethostname.so"


@dataclass(frozen=True)
class HostnameShim:
    library: Path | None
    """The library to LD_PRELOAD, or None when it could not be built here."""
    unavailable_because: str | None = None


def hostname_shim() -> HostnameShim:
    """The compiled shim from the cache, built on first use."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return HostnameShim(None, "no C compiler (cc or gcc) to build the gethostname shim")
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + platform.machine().encode() + compiler.encode()).hexdigest()[:16]

    def build(directory: Path) -> None:
        result = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(directory / LIBRARY_NAME),
                                 str(SOURCE), "-ldl"], capture_output=True, text=True, timeout=120,
                                check=False)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip() or f"{compiler} exited with {result.returncode}")

    try:
        return HostnameShim(cached_directory("gethostname", key, build)[0] / LIBRARY_NAME)
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        return HostnameShim(None, f"the gethostname shim did not build: {error}")
