"""pip's failed install of requirements.txt as `smtrain local` recorded it: shared by the tests that read it on
this machine (emulator) and from the toolkit's CloudWatch lines (observing)."""

# What pip printed for numpy==0.0.1 in requirements.txt (recorded by `smtrain local`, shortened).
VERSIONS = "1.3.0, 1.4.1, 1.5.0, 1.6.0, 1.6.1, 1.6.2, 1.6.3, 1.7.0, 1.7.1, 1.7.2, 1.7.3, 1.8.0, 1.8.1, 1.8.2, 1.8.3, 1.9.0, 1.9.1, 1.9.2, 1.9.3, 1.10.0, 1.10.1, 1.10.2, 1.10.3, 1.11.0, 1.11.1, 1.11.2, 1.11.3, 1.12.0, 1.12.1, 1.12.2, 1.12.3, 1.13.0, 1.13.1, 1.13.2, 1.13.3, 1.14.0, 1.14.1, 1.14.2, 1.14.3, 1.15.0, 1.15.1, 1.15.2, 1.15.3, 1.16.0, 1.16.1, 1.16.2, 1.16.3, 1.17.0, 1.17.1, 1.17.2, 1.17.3, 1.18.0, 1.18.1, 1.18.2, 1.18.3, 1.19.0, 1.19.1, 1.19.2, 1.19.3, 1.20.0, 1.20.1, 1.20.2, 1.20.3, 1.21.0, 1.21.1, 1.21.2, 1.21.3, 1.22.0, 1.22.1, 1.22.2, 1.22.3, 1.23.0, 1.23.1, 1.23.2, 1.23.3, 1.24.0, 1.24.1, 1.24.2, 1.24.3, 1.25.0, 1.25.1, 1.25.2, 1.25.3, 1.26.0, 1.26.1, 1.26.2, 1.26.3, 2.4.4, 2.4.5, 2.4.6"
PIP_OUTPUT = f"""\
Looking in indexes: https://pypi.org/simple
ERROR: Ignored the following yanked versions: 2.4.0
ERROR: Ignored the following versions that require a different python version: 1.21.2 Requires-Python >=3.7,<3.11
ERROR: Could not find a version that satisfies the requirement numpy==0.0.1 (from versions: {VERSIONS})
ERROR: No matching distribution found for numpy==0.0.1
"""
DECISIVE = "ERROR: No matching distribution found for numpy==0.0.1"

# What pip 24 printed on SageMaker for flash-attn==2.5.6 in requirements.txt: its build imports torch, which pip's
# isolated build environment lacks (shortened).
FLASH_ATTN_BUILD = """\
Collecting flash-attn==2.5.6 (from -r requirements.txt (line 3))
  Downloading flash_attn-2.5.6.tar.gz (2.5 MB)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'done'
  Getting requirements to build wheel: started
  Getting requirements to build wheel: finished with status 'error'
  error: subprocess-exited-with-error

  × Getting requirements to build wheel did not run successfully.
  │ exit code: 1
  ╰─> [20 lines of output]
      Traceback (most recent call last):
        File "/opt/conda/lib/python3.11/site-packages/pip/_vendor/pyproject_hooks/_in_process/_in_process.py", line 353, in <module>
          main()
        File "<string>", line 9, in <module>
      ModuleNotFoundError: No module named 'torch'
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× Getting requirements to build wheel did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
"""
FLASH_ATTN_FAILED = ("error: subprocess-exited-with-error: flash-attn==2.5.6: Getting requirements to build wheel did "
                     "not run successfully: ModuleNotFoundError: No module named 'torch'")
"""The build's failure as the reader names it: the requirement, pip's step and the build's own error."""


# What pip printed, offline, for requirements.txt `okpkg` / `# built from source` / `mypkg==1.0`, where
# mypkg is an sdist whose build dependency (setuptools>=40.8.0) no index has: the indented `ERROR:` lines are
# the build environment's own pip, never the source dir's requirement (recorded with pip 21.3.1, 24.0 and
# 26.0.1 against a local index, its address and the download URLs renamed). pip >= 23.1 says where it read
# each requirement.
MYPKG_BUILD_DEPS_PIP_21 = """\
Looking in indexes: https://pypi.org/simple
Collecting okpkg
  Downloading https://files.example/okpkg-1.0-py3-none-any.whl (900 bytes)
Collecting mypkg==1.0
  Downloading https://files.example/mypkg-1.0.tar.gz (254 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  ERROR: Command errored out with exit status 1:
   command: /opt/conda/bin/python3.11 -m pip install --ignore-installed --no-user --prefix /tmp/pip-build-env-u_7cw9np/overlay --no-warn-script-location --no-binary :none: --only-binary :none: -i https://pypi.org/simple -- 'setuptools>=40.8.0'
       cwd: None
  Complete output (3 lines):
  Looking in indexes: https://pypi.org/simple
  ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
  ERROR: No matching distribution found for setuptools>=40.8.0
  ----------------------------------------
WARNING: Discarding https://files.example/mypkg-1.0.tar.gz (from https://pypi.org/simple/mypkg/). Command errored out with exit status 1: /opt/conda/bin/python3.11 -m pip install --ignore-installed --no-user --prefix /tmp/pip-build-env-u_7cw9np/overlay --no-warn-script-location --no-binary :none: --only-binary :none: -i https://pypi.org/simple -- 'setuptools>=40.8.0' Check the logs for full command output.
ERROR: Could not find a version that satisfies the requirement mypkg==1.0 (from versions: 1.0)
ERROR: No matching distribution found for mypkg==1.0
"""
MYPKG_BUILD_DEPS_PIP_24 = """\
Looking in indexes: https://pypi.org/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/okpkg-1.0-py3-none-any.whl (900 bytes)
Collecting mypkg==1.0 (from -r requirements.txt (line 3))
  Downloading https://files.example/mypkg-1.0.tar.gz (254 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  error: subprocess-exited-with-error

  × pip subprocess to install build dependencies did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://pypi.org/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× pip subprocess to install build dependencies did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
"""
MYPKG_BUILD_DEPS_PIP_26 = """\
Looking in indexes: https://pypi.org/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/okpkg-1.0-py3-none-any.whl (900 bytes)
Collecting mypkg==1.0 (from -r requirements.txt (line 3))
  Downloading https://files.example/mypkg-1.0.tar.gz (254 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  error: subprocess-exited-with-error

  × installing build dependencies for mypkg did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://pypi.org/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
ERROR: Failed to build 'mypkg' when installing build dependencies for mypkg
"""
# pip 24 where requirements.txt line 2 is `toppkg`, a wheel that requires mypkg==1.0 (the sdist above).
MYPKG_AS_A_DEPENDENCY_PIP_24 = """\
Looking in indexes: https://pypi.org/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/okpkg-1.0-py3-none-any.whl (900 bytes)
Collecting toppkg (from -r requirements.txt (line 2))
  Downloading https://files.example/toppkg-1.0-py3-none-any.whl (939 bytes)
Collecting mypkg==1.0 (from toppkg->-r requirements.txt (line 2))
  Downloading https://files.example/mypkg-1.0.tar.gz (254 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  error: subprocess-exited-with-error

  × pip subprocess to install build dependencies did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://pypi.org/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× pip subprocess to install build dependencies did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
"""


# What pip printed, offline, for requirements.txt `okpkg` / `# the model code` / `toppkg==1.0`, where toppkg-1.0 is a
# wheel that requires missing-dep>=2 and the index has only missing-dep 1.0; recorded with pip 22.0.4, 23.2.1, 24.2
# and 26.3 (`pip install --target DIR --index-url URL -r requirements.txt`, each in its own Python) against a local
# simple index served by `python -m http.server` (wheels built by hand), its address renamed, trailing spaces
# trimmed. pip names only the dependency's parent (`(from toppkg)`, pip 26 on its last line too), never the line;
# pip >= 23.1 says where it read the parent. The versions are pip's own.
TOPPKG_NEEDS_MISSING_DEP = {
    "22.0.4": """\
Looking in indexes: https://files.example/simple
Collecting okpkg
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting toppkg==1.0
  Downloading https://files.example/simple/toppkg/toppkg-1.0-py3-none-any.whl (946 bytes)
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2
""",
    "23.2.1": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting toppkg==1.0 (from -r requirements.txt (line 3))
  Downloading https://files.example/simple/toppkg/toppkg-1.0-py3-none-any.whl (946 bytes)
INFO: pip is looking at multiple versions of toppkg to determine which version is compatible with other requirements. This could take a while.
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2
""",
    "24.2": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting toppkg==1.0 (from -r requirements.txt (line 3))
  Downloading https://files.example/simple/toppkg/toppkg-1.0-py3-none-any.whl (946 bytes)
INFO: pip is looking at multiple versions of toppkg to determine which version is compatible with other requirements. This could take a while.
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2
""",
    "26.3": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting toppkg==1.0 (from -r requirements.txt (line 3))
  Downloading toppkg-1.0-py3-none-any.whl (946 bytes)
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2 (from toppkg)
""",
}
# The same index, requirements.txt `okpkg` / `# the model code` / `deeppkg`, where deeppkg requires toppkg: pip names
# toppkg, which requirements.txt never does, and (pip >= 23.1) where it read deeppkg on toppkg's own line.
DEEPPKG_NEEDS_TOPPKG = {
    "22.0.4": """\
Looking in indexes: https://files.example/simple
Collecting okpkg
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting deeppkg
  Downloading https://files.example/simple/deeppkg/deeppkg-1.0-py3-none-any.whl (951 bytes)
Collecting toppkg
  Downloading https://files.example/simple/toppkg/toppkg-1.0-py3-none-any.whl (946 bytes)
INFO: pip is looking at multiple versions of deeppkg to determine which version is compatible with other requirements. This could take a while.
INFO: pip is looking at multiple versions of okpkg to determine which version is compatible with other requirements. This could take a while.
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2
""",
    "24.2": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting deeppkg (from -r requirements.txt (line 3))
  Downloading https://files.example/simple/deeppkg/deeppkg-1.0-py3-none-any.whl (951 bytes)
Collecting toppkg (from deeppkg->-r requirements.txt (line 3))
  Downloading https://files.example/simple/toppkg/toppkg-1.0-py3-none-any.whl (946 bytes)
INFO: pip is looking at multiple versions of toppkg to determine which version is compatible with other requirements. This could take a while.
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2
""",
    "26.3": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting deeppkg (from -r requirements.txt (line 3))
  Downloading deeppkg-1.0-py3-none-any.whl (951 bytes)
Collecting toppkg (from deeppkg->-r requirements.txt (line 3))
  Downloading toppkg-1.0-py3-none-any.whl (946 bytes)
INFO: pip is looking at multiple versions of toppkg to determine which version is compatible with other requirements. This could take a while.
ERROR: Could not find a version that satisfies the requirement missing-dep>=2 (from toppkg) (from versions: 1.0)
ERROR: No matching distribution found for missing-dep>=2 (from toppkg)
""",
}
# The same index, requirements.txt `okpkg` / `chainpkg==1.0`, where chainpkg requires midpkg, which requires the
# sdist mypkg==1.0, whose build dependency (setuptools>=40.8.0) the index lacks: pip >= 23.1 names the chain on
# mypkg's line (`(from midpkg->chainpkg==1.0->-r ...)`). pip 22 and 23.0 built mypkg with the running Python's
# setuptools (no pyproject.toml, the legacy `setup.py install`) and succeeded.
CHAINPKG_BUILD_DEPS = {
    "23.2.1": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting chainpkg==1.0 (from -r requirements.txt (line 2))
  Downloading https://files.example/simple/chainpkg/chainpkg-1.0-py3-none-any.whl (964 bytes)
Collecting midpkg (from chainpkg==1.0->-r requirements.txt (line 2))
  Downloading https://files.example/simple/midpkg/midpkg-1.0-py3-none-any.whl (942 bytes)
Collecting mypkg==1.0 (from midpkg->chainpkg==1.0->-r requirements.txt (line 2))
  Downloading https://files.example/simple/mypkg/mypkg-1.0.tar.gz (235 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  error: subprocess-exited-with-error

  × pip subprocess to install build dependencies did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://files.example/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× pip subprocess to install build dependencies did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
""",
    "24.2": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading https://files.example/simple/okpkg/okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting chainpkg==1.0 (from -r requirements.txt (line 2))
  Downloading https://files.example/simple/chainpkg/chainpkg-1.0-py3-none-any.whl (964 bytes)
Collecting midpkg (from chainpkg==1.0->-r requirements.txt (line 2))
  Downloading https://files.example/simple/midpkg/midpkg-1.0-py3-none-any.whl (942 bytes)
Collecting mypkg==1.0 (from midpkg->chainpkg==1.0->-r requirements.txt (line 2))
  Downloading https://files.example/simple/mypkg/mypkg-1.0.tar.gz (235 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  error: subprocess-exited-with-error

  × pip subprocess to install build dependencies did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://files.example/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× pip subprocess to install build dependencies did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.
""",
    "26.3": """\
Looking in indexes: https://files.example/simple
Collecting okpkg (from -r requirements.txt (line 1))
  Downloading okpkg-1.0-py3-none-any.whl (903 bytes)
Collecting chainpkg==1.0 (from -r requirements.txt (line 2))
  Downloading chainpkg-1.0-py3-none-any.whl (964 bytes)
Collecting midpkg (from chainpkg==1.0->-r requirements.txt (line 2))
  Downloading midpkg-1.0-py3-none-any.whl (942 bytes)
Collecting mypkg==1.0 (from midpkg->chainpkg==1.0->-r requirements.txt (line 2))
  Downloading mypkg-1.0.tar.gz (235 bytes)
  Installing build dependencies: started
  Installing build dependencies: finished with status 'error'
  error: subprocess-exited-with-error

  × installing build dependencies for mypkg did not run successfully.
  │ exit code: 1
  ╰─> [3 lines of output]
      Looking in indexes: https://files.example/simple
      ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0 (from versions: none)
      ERROR: No matching distribution found for setuptools>=40.8.0
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
ERROR: Failed to build 'mypkg' when installing build dependencies for mypkg
""",
}
