"""requirements.txt and setup.py in the source dir, installed as the toolkit installs them, never into smtrain's
own environment.

The toolkit (`entry_point.install`, `modules.py`) runs `pip install -r requirements.txt` before a Python script,
and with a setup.py `pip install . [-r requirements.txt]`, into the container's Python; a failure is an
InstallRequirementsError (InstallModuleError for a package) and the job fails. Here pip installs into an
overlay instead: a virtual environment of the run's interpreter that also sees that interpreter's installed
packages (a `.pth` file listing its site-packages, never its standard library, which pip's isolated builds must
keep), so pip counts what the environment has as satisfied, as in the DLC, builds sdists and local paths, and
leaves the environment alone (pip never uninstalls outside its own environment). The training processes see the
overlay as site-packages, after the standard library (`overlay_site/`), and its `bin` on PATH. Overlays are
cached by the environment that runs the job (its sys.prefix, Python version and installed distributions) and by
what they install: a requirements.txt by its text, a package by the whole source tarball.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.emulator.instances.cache import cached_directory
from orchestrator.emulator.launching.opt_ml import contained
from orchestrator.emulator.launching.toolkit_launchers import EntryPointType
from orchestrator.observing.pip_failure import pip_failure_line
from orchestrator.specs.image_pins import canonical_name

_PIP_TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class Overlay:
    """Where an install went: `site_packages` goes first on PYTHONPATH, `bin` on PATH."""

    root: Path
    site_packages: Path
    freshly_installed: bool
    pip_output: str = ""
    replaced: tuple[str, ...] = ()
    """Distributions the environment has that the overlay holds in another version (`numpy 1.24.2 -> 2.4.6`):
    pip changed them for another requirement, as it would in the image, and the job sees the overlay's."""

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"


def pip_error(output: str) -> str:
    """pip's own account of a failure, said as a SageMaker job's log of the same install is (`pip_failure_line`:
    the decisive line, a dependency from the requirement that needed it, a failed build with its package, step
    and the build's own error), else its last line that is not a note."""
    lines = output.splitlines()
    said = [text for line in lines if (text := line.strip()) and not text.startswith(("note:", "hint:"))]
    return pip_failure_line(lines) or (said[-1] if said else "")


class InstallFailed(Exception):
    """pip failed: the toolkit would raise `error_class` and the job would fail."""

    def __init__(self, error_class: str, command: str, return_code: int, output: str) -> None:
        super().__init__(f"{error_class}: {command} exited with {return_code}")
        self.error_class = error_class
        self.command = command
        self.return_code = return_code
        self.output = output


def install_command(kind: EntryPointType, code_dir: Path) -> tuple[list[str], str] | None:
    """The toolkit's pip arguments for this source dir and the error class of their failure; None: nothing to
    install (a shell entry point, or a script without requirements.txt)."""
    has_requirements = (code_dir / REQUIREMENTS_FILE).is_file()
    if kind is EntryPointType.python_package:
        return ["install", ".", *(["-r", REQUIREMENTS_FILE] if has_requirements else [])], "InstallModuleError"
    if kind is EntryPointType.python_program and has_requirements:
        return ["install", "-r", REQUIREMENTS_FILE], "InstallRequirementsError"
    return None


def install_user_code(python: str, code_dir: Path, kind: EntryPointType, source_sha256: str,
                      notice: Callable[[str], None]) -> Overlay | None:
    """Installs what the toolkit would install before the entry point (once per content), or None; `notice` says
    when the run waits for another run that installs the same content (two jobs of a CI matrix at once).

    Raises:
        InstallFailed: pip exited non-zero; its output is kept for the failure reason.
    """
    command = install_command(kind, code_dir)
    if command is None:
        return None
    pip_args, error_class = command
    local = _local_references(code_dir, error_class, f"{python} -m pip {' '.join(command[0])}")
    content = (code_dir / REQUIREMENTS_FILE).read_bytes() + _digest(local) \
        if kind is EntryPointType.python_program else source_sha256.encode()
    environment = _probe(python)
    # two virtualenvs of one base Python differ here: their prefix and installed distributions
    identity = json.dumps([environment["prefix"], environment["version"], environment["dists"]]).encode()
    key = hashlib.sha256(b"\0".join([identity, json.dumps(pip_args).encode(), content])).hexdigest()[:24]
    output: list[str] = []

    def build(directory: Path) -> None:
        subprocess.run([python, "-m", "venv", "--without-pip", str(directory)], check=True, capture_output=True,
                       timeout=120)
        # The overlay sees the packages `python` has (its venv's site-packages included), after its own.
        (_site_packages(directory) / "_smtrain_base_packages.pth").write_text("\n".join(environment["paths"]) + "\n")
        # pip's temporary folders (builds, isolated build environments) in the entry it builds: a killed pip
        # leaves them where the half-built entry is removed, not in the machine's /tmp.
        scratch = directory / _PIP_SCRATCH
        scratch.mkdir()
        result = _run_to_the_end([str(directory / "bin" / "python"), "-m", "pip", "install",
                                  "--disable-pip-version-check", "--no-input", *pip_args[1:]], code_dir,
                                 {**os.environ, "TMPDIR": str(scratch)})
        shutil.rmtree(scratch, ignore_errors=True)
        output.append(result.stdout + result.stderr)
        if result.returncode != 0:
            raise InstallFailed(error_class, f"{python} -m pip {' '.join(pip_args)}", result.returncode,
                                result.stdout + result.stderr)


    def waiting(directory: Path, holder: str) -> None:
        notice(f"waiting for another run ({holder}) that installs the same requirements into {directory}: this run "
               "uses that install once it is complete (or installs them itself if it fails)")

    root, fresh = cached_directory("overlays", key, build, waiting)
    site_packages = _site_packages(root)
    return Overlay(root=root, site_packages=site_packages, freshly_installed=fresh, pip_output="".join(output),
                   replaced=_replaced(environment["dists"], site_packages))


_PIP_SCRATCH = ".pip-tmp"
"""pip's TMPDIR, inside the overlay it builds, removed when pip ends."""

_PATH_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-e", "--editable"})
_INDEX_OPTIONS = frozenset({"-f", "--find-links", "-i", "--index-url", "--extra-index-url"})
"""Where pip looks for packages, not what it installs: a local wheelhouse for offline work is left as it is."""
_ARCHIVES = (".whl", ".tar.gz", ".tgz", ".zip", ".tar.bz2")


def _local_references(code_dir: Path, error_class: str, command: str) -> list[Path]:
    """The files and folders requirements.txt installs from on this machine (`./pkg`, a wheel, `file:` URLs, `-r`,
    `-c` and `-e` paths), which must lie in the source dir: SageMaker's container has nothing else.

    Raises:
        InstallFailed: a path outside the source dir (the toolkit's install would fail there).
    """
    path = code_dir / REQUIREMENTS_FILE
    if not path.is_file():
        return []
    found: list[Path] = []
    root = code_dir.resolve()
    for line in path.read_text(errors="replace").splitlines():
        words = re.sub(r"(^|\s)#.*", "", line).split()
        option = ""
        for word in words:
            if word.startswith("-"):  # an option, its value next or after `=`
                option, _, word = word.partition("=")
                if not word:
                    continue
            current, option = option, ""
            if current in _INDEX_OPTIONS:
                continue
            after_option = current in _PATH_OPTIONS
            if word.startswith("file:"):
                named = unquote(urlparse(word).path) or word[len("file:"):]
            elif after_option or word.startswith((".", "/", "~")) or word.endswith(_ARCHIVES):
                if "://" in word:
                    continue
                named = word
            else:
                continue
            local = (code_dir / Path(named).expanduser()).resolve()
            if not local.is_relative_to(root):
                raise InstallFailed(error_class, command, 1,
                                    f"ERROR: requirements.txt names {named}, outside the source dir: SageMaker's "
                                    "container has only the source dir, so the install fails there; put it in "
                                    "the source dir and name it relative to requirements.txt")
            found.append(local)
    return found


def _digest(paths: list[Path]) -> bytes:
    """The content of the files and folders requirements.txt names: a wheel rebuilt under the same name is a new
    overlay, not a stale one."""
    digest = hashlib.sha256()
    for path in paths:
        for item in sorted([path] if path.is_file() else path.rglob("*") if path.is_dir() else []):
            if item.is_file():
                digest.update(str(item.relative_to(path.parent)).encode() + b"\0" + item.read_bytes() + b"\0")
    return digest.digest()


def _replaced(environment_dists: list[list[str]], site_packages: Path) -> tuple[str, ...]:
    """`name old -> new` for each distribution of the environment that the overlay holds in another version."""
    have = {canonical_name(name): version for name, version in environment_dists}
    found = []
    for distribution in metadata.distributions(path=[str(site_packages)]):
        name = distribution.metadata["Name"] or ""
        before = have.get(canonical_name(name))
        if before is not None and before != distribution.version:
            found.append(f"{name} {before} -> {distribution.version}")
    return tuple(sorted(found, key=str.lower))


def _run_to_the_end(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """pip in a session and a PID namespace of its own: when smtrain is interrupted (Ctrl-C, SIGTERM, SIGHUP) or
    pip times out, pip and every build it started are killed and waited for, never left running; when pip ends,
    so does whatever a build hook started (a daemon holding pip's output open would otherwise hang the read)."""
    with subprocess.Popen(contained(command), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=_PIP_TIMEOUT_SECONDS)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages"))
    if not found:
        raise OSError(f"{venv} has no lib/python*/site-packages")
    return found[0]


# The interpreter's import paths that are not its standard library (site-packages, .pth additions such as
# editable installs), and what identifies its environment: prefix, version, every installed distribution.
_PROBE = """
import json, os, sys, sysconfig
from importlib import metadata
standard = {os.path.realpath(sysconfig.get_paths()[name]) for name in ("stdlib", "platstdlib")}
def standard_library(path):
    real = os.path.realpath(path)
    inside = any(real == root or real.startswith(root + os.sep) for root in standard)
    return inside and "site-packages" not in real and "dist-packages" not in real
paths = [p for p in sys.path if p and os.path.isdir(p) and not standard_library(p)]
dists = sorted({(d.metadata["Name"] or "", d.version) for d in metadata.distributions()})
print(json.dumps({"paths": paths, "prefix": sys.prefix, "version": sys.version, "dists": dists}))
"""


def _probe(python: str) -> dict:
    result = subprocess.run([python, "-c", _PROBE], check=True, capture_output=True, text=True, timeout=120)
    return json.loads(result.stdout)


