"""A failed install points at the line of requirements.txt that names what pip could not install: found by the
requirement's canonical name whatever its extras, version or markers (or a path's last component), through one
simple `-r` include, and the file alone where no line names it."""

from __future__ import annotations

import pytest
from recorded_pip import (
    CHAINPKG_BUILD_DEPS,
    DEEPPKG_NEEDS_TOPPKG,
    FLASH_ATTN_BUILD,
    MYPKG_AS_A_DEPENDENCY_PIP_24,
    MYPKG_BUILD_DEPS_PIP_21,
    MYPKG_BUILD_DEPS_PIP_24,
    MYPKG_BUILD_DEPS_PIP_26,
    PIP_OUTPUT,
    TOPPKG_NEEDS_MISSING_DEP,
)

from orchestrator.observing.requirement_lines import (
    RequirementLine,
    dependency_path,
    failed_requirement,
    pip_read_at,
    required_by,
    requirement_line,
)

# pip 26 on a source build whose own build dependencies could not be found: the indented `ERROR:` lines are the
# build environment's (setuptools), not the source dir's requirement.
PIP_26_BUILD = """\
Processing ./fl/flash_attn-2.5.6.tar.gz (from -r requirements.txt (line 1))
  Installing build dependencies: started
  error: subprocess-exited-with-error

  × installing build dependencies for flash-attn did not run successfully.
  ╰─> [3 lines of output]
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]
ERROR: Failed to build 'flash-attn' when installing build dependencies for flash-attn
"""
# pip 26 on a local folder whose setup.py raises: no `ERROR:` line, only its diagnostic code.
LOCAL_BUILD = """\
Processing ./brokenpkg
  Preparing metadata (pyproject.toml): started
  error: subprocess-exited-with-error
      RuntimeError: brokenpkg needs a CUDA compiler
      [end of output]
error: metadata-generation-failed
"""


@pytest.mark.parametrize(("output", "requirement"), [
    (PIP_OUTPUT, "numpy==0.0.1"),
    ("ERROR: Could not find a version that satisfies the requirement torchmetricz==99.0 (from versions: none)",
     "torchmetricz==99.0"),
    (FLASH_ATTN_BUILD, "flash-attn==2.5.6"),
    (PIP_26_BUILD, "flash-attn"),
    (LOCAL_BUILD, "./brokenpkg"),
    ("ERROR: Failed building wheel for horovod", "horovod"),
    ("Looking in indexes: https://pypi.org/simple\nKilled", None),
])
def test_the_failed_requirement_is_the_one_pip_names_never_a_build_s_own(output, requirement):
    assert failed_requirement(output.splitlines()) == requirement


REQUIREMENTS = """\
--extra-index-url https://download.pytorch.org/whl/cpu
numpy>=1.24  # arrays
# metrics
Torch_Metricz [image] == 99.0 ; python_version >= "3.8"
transformers @ https://example.com/transformers-4.0-py3-none-any.whl
accelerate==0.30.0 \\
    --hash=sha256:abc
./brokenpkg
git+https://github.com/org/repo.git#egg=Our.Lib
"""


@pytest.mark.parametrize(("requirement", "line"), [
    ("torch.metricz==99.0", 4),              # case, `_`, `.` and `-` alike; extras, markers and spaces ignored
    ("TORCH-METRICZ", 4),
    ("numpy==0.0.1", 2),
    ("transformers", 5),                     # `name @ URL`
    ("accelerate==0.30.0", 6),               # a continued line: the line it starts on
    ("file:///opt/ml/code/brokenpkg", 8),    # a path, as pip names it on the host, by its last component
    ("./brokenpkg", 8),
    ("our-lib", 9),                          # `#egg=`
])
def test_a_requirement_is_found_on_the_line_that_names_it(tmp_path, requirement, line):
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    assert requirement_line(tmp_path, requirement) == RequirementLine("requirements.txt", line)


def test_a_requirement_no_line_names_points_at_the_file_alone(tmp_path):
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    assert str(requirement_line(tmp_path, "setuptools>=40.8.0")) == "requirements.txt"
    assert str(requirement_line(tmp_path, "torchmetricz")) == "requirements.txt"  # PEP 503 keeps the separator
    assert str(requirement_line(tmp_path, None)) == "requirements.txt"
    assert str(requirement_line(tmp_path, "download")) == "requirements.txt"  # an option's word is no requirement


def test_a_simple_include_is_followed_one_level(tmp_path):
    (tmp_path / "reqs").mkdir()
    (tmp_path / "requirements.txt").write_text("numpy\n-r reqs/base.txt\n--requirement=reqs/deep.txt\n")
    (tmp_path / "reqs" / "base.txt").write_text("# base\n\ntorchmetricz==99.0\n-r more.txt\n")
    (tmp_path / "reqs" / "deep.txt").write_text("-r base.txt\n")
    (tmp_path / "reqs" / "more.txt").write_text("wandb==99\n")
    assert str(requirement_line(tmp_path, "torchmetricz==99.0")) == "reqs/base.txt:3"
    assert str(requirement_line(tmp_path, "numpy")) == "requirements.txt:1"
    assert str(requirement_line(tmp_path, "wandb==99")) == "requirements.txt"  # two levels down: no line


@pytest.mark.parametrize("include", ["-r ../outside.txt", "-r $REQS/base.txt", "-r https://example.com/r.txt",
                                     "-r missing.txt"])
def test_an_include_that_is_not_simple_gives_no_line(tmp_path, include):
    source = tmp_path / "src"
    source.mkdir()
    (tmp_path / "outside.txt").write_text("torchmetricz==99.0\n")
    (source / "requirements.txt").write_text(f"{include}\n")
    assert str(requirement_line(source, "torchmetricz==99.0")) == "requirements.txt"


def test_an_unreadable_requirements_file_points_at_the_file(tmp_path):
    assert str(requirement_line(tmp_path, "torchmetricz==99.0")) == "requirements.txt"


# pip's own words for where it read a requirement, as recorded offline (pip 23.1 and later; the include's folder
# as pip ran in /opt/ml/code).
INCLUDED_PIP_24 = """\
Collecting okpkg (from -r requirements.txt (line 1))
Collecting mypkg==1.0 (from -r sub/other2.txt (line 1))
  error: subprocess-exited-with-error
error: subprocess-exited-with-error
"""
INCLUDED_PIP_26 = """\
Collecting okpkg (from -r requirements.txt (line 1))
Collecting mypkg==1.0 (from -r /opt/ml/code/sub/other2.txt (line 1))
ERROR: Failed to build 'mypkg' when installing build dependencies for mypkg
"""
FROM_FIND_LINKS_PIP_26 = """\
Processing /tmp/links/okpkg-1.0-py3-none-any.whl (from -r requirements.txt (line 1))
Processing /tmp/links/mypkg-1.0.tar.gz (from -r requirements.txt (line 3))
ERROR: Failed to build 'mypkg' when installing build dependencies for mypkg
"""
NOT_FOUND_PIP_26 = """\
Processing /tmp/links/okpkg-1.0-py3-none-any.whl (from -r requirements.txt (line 1))
ERROR: Could not find a version that satisfies the requirement torchmetricz==99.0 (from versions: none)
ERROR: No matching distribution found for torchmetricz==99.0
"""


@pytest.mark.parametrize(("output", "read_at"), [
    (MYPKG_BUILD_DEPS_PIP_24, RequirementLine("requirements.txt", 3)),
    (MYPKG_BUILD_DEPS_PIP_26, RequirementLine("requirements.txt", 3)),
    (FLASH_ATTN_BUILD, RequirementLine("requirements.txt", 3)),
    (FROM_FIND_LINKS_PIP_26, RequirementLine("requirements.txt", 3)),    # an archive's path names its distribution
    (INCLUDED_PIP_24, RequirementLine("sub/other2.txt", 1)),             # an include as it was written
    (INCLUDED_PIP_26, RequirementLine("/opt/ml/code/sub/other2.txt", 1)),  # pip 26: by its absolute path
    (MYPKG_AS_A_DEPENDENCY_PIP_24, RequirementLine("requirements.txt", 2)),  # the line that required it
    (MYPKG_BUILD_DEPS_PIP_21, None),                                     # pip < 23.1 does not say
    (NOT_FOUND_PIP_26, None),                                            # pip never collected what it did not find
])
def test_pip_says_where_it_read_the_requirement_it_could_not_install(output, read_at):
    lines = output.splitlines()
    assert pip_read_at(lines, failed_requirement(lines)) == read_at


@pytest.mark.parametrize(("output", "failed", "chain"), [
    (TOPPKG_NEEDS_MISSING_DEP["22.0.4"], "missing-dep>=2", ("toppkg",)),
    (TOPPKG_NEEDS_MISSING_DEP["24.2"], "missing-dep>=2", ("toppkg",)),
    (TOPPKG_NEEDS_MISSING_DEP["26.3"], "missing-dep>=2", ("toppkg",)),     # pip 26's `(from toppkg)` is no version
    (DEEPPKG_NEEDS_TOPPKG["22.0.4"], "missing-dep>=2", ("toppkg",)),       # pip < 23.1 names the parent alone
    (DEEPPKG_NEEDS_TOPPKG["24.2"], "missing-dep>=2", ("deeppkg", "toppkg")),
    (CHAINPKG_BUILD_DEPS["24.2"], "mypkg==1.0", ("chainpkg==1.0", "midpkg")),
    (MYPKG_BUILD_DEPS_PIP_24, "mypkg==1.0", ()),                          # written in requirements.txt itself
    (PIP_OUTPUT, "numpy==0.0.1", ()),
])
def test_what_pulled_in_the_requirement_pip_could_not_install(output, failed, chain):
    """What requirements.txt names first, then each dependency down to the one that needed the failed one, from
    pip's `(from toppkg)` and its `(from midpkg->chainpkg==1.0->-r ...)` (real pip output: recorded_pip.py)."""
    lines = output.splitlines()
    assert (failed_requirement(lines), required_by(lines, failed)) == (failed, chain)


@pytest.mark.parametrize(("chain", "said"), [
    ((), "missing-dep>=2"),
    (("toppkg",), "toppkg needs missing-dep>=2"),
    (("deeppkg", "toppkg"), "deeppkg needs toppkg, which needs missing-dep>=2"),
])
def test_a_dependency_is_said_from_what_requirements_txt_names(chain, said):
    assert dependency_path(chain, "missing-dep>=2") == said
