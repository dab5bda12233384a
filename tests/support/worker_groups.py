"""Test modules that share a costly in-process import run on one xdist worker (a pytest plugin that
tests/conftest.py loads). Under scripts/test.sh's `--dist loadscope` each module is a work unit of its own; the
modules of a group below form one, so that one worker pays their import instead of each. xdist's `xdist_group`
mark cannot say so: it counts only under `--dist loadgroup`, where every unmarked test is a unit of its own (a
module's shared fixtures made once per test), and xdist's controller, which assigns the units, sees only test ids."""

from __future__ import annotations

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

# Each group's modules, as their test ids begin. tests/suite/test_suite_order.py keeps the SDK's group whole.
GROUPS = {
    # They import SageMaker SDK v2 in the pytest process: about 2 CPU-s, and the referee's sessions.
    "sagemaker-sdk-v2": ("tests/cloud/test_sdk.py", "tests/contract/test_platform_variables.py",
                         "tests/referees/sdk/test_sdk_defaults_referee.py", "tests/referees/sdk/test_sdk_referee.py",
                         "tests/referees/sdk/test_tuning_referee.py", "tests/specs/test_capabilities.py"),
    # They import cfn-lint to read smtrain's CloudFormation template: about 0.6 CPU-s.
    "cfn-lint": ("tests/infra/test_infra_role_scope.py", "tests/infra/test_infra_template.py"),
}
_GROUP_OF_MODULE = {module: group for group, modules in GROUPS.items() for module in modules}


class ModuleOrGroupScheduling(LoadScopeScheduling):
    """`--dist loadscope`, a module (or class) per work unit, except that the modules of a group are one."""

    def _split_scope(self, nodeid: str) -> str:
        return _GROUP_OF_MODULE.get(nodeid.split("::", 1)[0]) or super()._split_scope(nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer | None) -> LoadScopeScheduling | None:
    """In xdist's controller: the scheduling for `--dist loadscope`; any other mode is xdist's own."""
    if config.getvalue("dist") == "loadscope":
        return ModuleOrGroupScheduling(config, log)
    return None
