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
