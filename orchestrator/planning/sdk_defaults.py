"""The SageMaker Python SDK's defaults configuration, read as the SDK reads it, without the SDK.

Platform teams ship `config.yaml` files with `SageMaker.TrainingJob` defaults (role, VPC, KMS keys, isolation,
encryption, environment, tags, profiler) and the session's default bucket and prefix; both SDK major versions
apply them to every training job. This module mirrors SDK v2 (sagemaker 2.257.7):

* `sagemaker/config/config.py` `load_sagemaker_config`: the admin file, then the user file; each location is
  `$SAGEMAKER_ADMIN_CONFIG_OVERRIDE` / `$SAGEMAKER_USER_CONFIG_OVERRIDE` or platformdirs' `site_config_dir` /
  `user_config_dir` of "sagemaker" plus `config.yaml`; a directory means its `config.yaml`; an `s3://` location is
  read from S3; a missing file at a default location is skipped, one named by a variable is an error; an empty
  document is not applied; the documents are merged with botocore's `merge_dicts`: mappings key by key, and any
  other value, a list included (Tags, Subnets), replaced whole by the later file's.
* `sagemaker/utils.py` `resolve_value_from_config`: a value the caller gives wins over the merged config.

`tests/referees/sdk/test_sdk_defaults_referee.py` holds this reading against SDK v2's own loader.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import EnvironmentProblem, SpecError
from orchestrator.specs.loader import MAX_SPEC_BYTES, load_untrusted_yaml

ADMIN_OVERRIDE_ENV = "SAGEMAKER_ADMIN_CONFIG_OVERRIDE"
USER_OVERRIDE_ENV = "SAGEMAKER_USER_CONFIG_OVERRIDE"
CONFIG_FILE_NAME = "config.yaml"
SCHEMA_VERSION = "1.0"
READ_LIMIT = MAX_SPEC_BYTES + 1
"""Bytes read of a defaults file: one more than a defaults file (held to a spec's size) may have, to know."""

TRAINING_JOB = "SageMaker.TrainingJob"
SESSION = "SageMaker.PythonSDK.Modules.Session"
ESTIMATOR = "SageMaker.PythonSDK.Modules.Estimator"

# The keys the SDK's schema allows (config_schema.py), with the type each must have: what smtrain reads.
_TYPES: dict[str, type | tuple[type, ...]] = {
    f"{TRAINING_JOB}.RoleArn": str,
    f"{TRAINING_JOB}.VpcConfig.Subnets": list,
    f"{TRAINING_JOB}.VpcConfig.SecurityGroupIds": list,
    f"{TRAINING_JOB}.EnableNetworkIsolation": bool,
    f"{TRAINING_JOB}.EnableInterContainerTrafficEncryption": bool,
    f"{TRAINING_JOB}.OutputDataConfig.KmsKeyId": str,
    f"{TRAINING_JOB}.ResourceConfig.VolumeKmsKeyId": str,
    f"{TRAINING_JOB}.Environment": dict,
    f"{TRAINING_JOB}.Tags": list,
    f"{TRAINING_JOB}.ProfilerConfig.DisableProfiler": bool,
    f"{SESSION}.DefaultS3Bucket": str,
    f"{SESSION}.DefaultS3ObjectKeyPrefix": str,
    f"{ESTIMATOR}.DebugHookConfig": bool,
}
_SECTIONS = {TRAINING_JOB, SESSION, ESTIMATOR, f"{TRAINING_JOB}.VpcConfig", f"{TRAINING_JOB}.OutputDataConfig",
             f"{TRAINING_JOB}.ResourceConfig", f"{TRAINING_JOB}.ProfilerConfig"}


@dataclass(frozen=True)
class ConfigFile:
    """One defaults document that was read: whose it is (admin or user), where it was read, what it says."""

    level: str
    location: str
    document: Mapping[str, Any]


@dataclass(frozen=True)
class Setting:
    """One value of the merged configuration, and the file it came from."""

    key: str
    value: Any
    file: ConfigFile


@dataclass(frozen=True)
class SdkDefaults:
    """The documents read, in the SDK's order (admin, then user), and what they say merged."""

    files: tuple[ConfigFile, ...] = ()
    unread: tuple[str, ...] = ()
    """S3 locations that were not read (validate is offline)."""

    @property
    def merged(self) -> dict[str, Any]:
        """The documents merged as the SDK merges them (botocore `merge_dicts`, admin first)."""
        merged: dict[str, Any] = {}
        for config in self.files:
            merge_dicts(merged, copy.deepcopy(dict(config.document)))
        return merged

    def get(self, key: str) -> Setting | None:
        """The merged value at a dotted key, with the last file that sets it (later files win)."""
        value = lookup(self.merged, key)
        if value is None:
            return None
        return Setting(key, value, self.file_of(key))

    def file_of(self, key: str) -> ConfigFile:
        """The last file that sets `key` (for a mapping, the last one that sets any of its keys)."""
        return next(config for config in reversed(self.files) if lookup(config.document, key) is not None)

    def admin_value(self, key: str) -> Any:
        """What the admin file alone says at `key` (for findings about specs that contradict it)."""
        admin = next((config for config in self.files if config.level == "admin"), None)
        return lookup(admin.document, key) if admin else None


def merge_dicts(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    """botocore.utils.merge_dicts (append_lists=False), which the SDK merges its files with."""
    for key, value in other.items():
        if isinstance(value, dict) and key in into:
            merge_dicts(into[key], value)
        else:
            into[key] = value


def lookup(document: Mapping[str, Any], key: str) -> Any:
    """`sagemaker.utils.get_config_value`: the value at a dotted path, None where a key is missing."""
    current: Any = document
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def default_locations() -> dict[str, str]:
    """platformdirs' `site_config_dir("sagemaker")` and `user_config_dir("sagemaker")`, plus config.yaml."""
    home = Path.home()
    if sys.platform == "darwin":
        site, user = "/Library/Application Support", str(home / "Library" / "Application Support")
    else:
        site_dirs = [path for path in os.environ.get("XDG_CONFIG_DIRS", "").split(os.pathsep) if path.startswith("/")]
        site = site_dirs[0] if site_dirs else "/etc/xdg"
        user_home = os.environ.get("XDG_CONFIG_HOME", "")
        user = user_home if user_home.startswith("/") else str(home / ".config")
    return {"admin": os.path.join(site, "sagemaker", CONFIG_FILE_NAME),
            "user": os.path.join(user, "sagemaker", CONFIG_FILE_NAME)}


def locations() -> list[tuple[str, str, str | None]]:
    """(level, location, the variable that named it or None for the default location), admin first."""
    defaults = default_locations()
    found = []
    for level, variable in (("admin", ADMIN_OVERRIDE_ENV), ("user", USER_OVERRIDE_ENV)):
        named = os.environ.get(variable)
        found.append((level, named, variable) if named is not None else (level, defaults[level], None))
    return found


def load_sdk_defaults(read_s3: Callable[[str], bytes] | None = None) -> SdkDefaults:
    """Reads the admin and user documents as SDK v2's `load_sagemaker_config` does.

    Args:
        read_s3: returns the config document at an s3:// location, at most READ_LIMIT bytes of it (the cloud
            layer's reader); None leaves S3 locations unread (listed in `unread`).

    Raises:
        EnvironmentProblem: a location a variable names does not exist, or a document is not valid YAML or
            not a valid SDK defaults document (the SDK refuses such a document too).
    """
    files, unread = [], []
    defaults = set(default_locations().values())
    for level, location, variable in locations():
        if location.startswith("s3://"):
            if read_s3 is None:
                unread.append(location)
                continue
            data, shown = read_s3(location), location
        else:
            data, shown = _local_bytes(location, variable, location in defaults)
        if data is None:
            continue
        document = _parse(data, shown)
        if document:
            _check_document(document, shown)
            files.append(ConfigFile(level, shown, document))
    return SdkDefaults(tuple(files), tuple(unread))


def _local_bytes(location: str, variable: str | None, is_default: bool) -> tuple[bytes | None, str]:
    path = Path(location)
    if path.is_dir():
        path = path / CONFIG_FILE_NAME
    if not path.is_file():
        if is_default:
            return None, str(path)
        raise EnvironmentProblem(
            f"${variable} names {location}, which does not exist (the SageMaker SDK refuses it too)",
            fix=f"point {variable} at the SDK defaults file (or its folder), or unset it")
    try:
        with path.open("rb") as handle:
            return handle.read(READ_LIMIT), str(path)
    except OSError as exc:
        raise EnvironmentProblem(f"{path}: cannot read the SageMaker SDK defaults file: {exc.strerror}",
                                 fix="make it readable, or point the variable elsewhere") from None


def _parse(data: bytes, shown: str) -> Any:
    """The document, read with the spec's guards (size, encoding, depth, aliases): it is as untrusted as a spec."""
    import yaml

    try:
        return load_untrusted_yaml(data, shown, "SageMaker SDK defaults file")
    except SpecError as exc:
        raise EnvironmentProblem(exc.message, fix=exc.fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown
        problem = getattr(exc, "problem", None) or str(exc)
        raise EnvironmentProblem(f"{where}: the SageMaker SDK defaults file is not valid YAML: {problem}",
                                 fix="correct the YAML (the SDK cannot read it either)") from None


def _check_document(document: Any, shown: str) -> None:
    """The parts of the SDK's schema smtrain reads: SchemaVersion 1.0 and the type of each value it applies.

    Raises:
        EnvironmentProblem: naming the file, the key and what the SDK's schema expects.
    """
    def refuse(key: str, expected: str) -> EnvironmentProblem:
        return EnvironmentProblem(f"{shown}: {key}: {expected} (SageMaker SDK defaults schema)",
                                  fix=f"correct {key} in {shown}, as the SDK would refuse the file too")

    if not isinstance(document, Mapping):
        raise refuse("(document)", "must be a mapping with SchemaVersion: '1.0'")
    if document.get("SchemaVersion") != SCHEMA_VERSION:
        raise refuse("SchemaVersion", f"must be the string '{SCHEMA_VERSION}'")
    for section in sorted(_SECTIONS):
        value = lookup(document, section)
        if value is not None and not isinstance(value, Mapping):
            raise refuse(section, "must be a mapping")
        for key in (value or {}):
            if f"{section}.{key}" not in _TYPES and f"{section}.{key}" not in _SECTIONS:
                raise refuse(f"{section}.{key}", "is not a key the schema allows here")
    for key, expected in _TYPES.items():
        value = lookup(document, key)
        if value is not None and (not isinstance(value, expected) or (expected is not bool and isinstance(value, bool))):
            raise refuse(key, f"must be a {expected.__name__ if isinstance(expected, type) else expected}")
    for index, tag in enumerate(lookup(document, f"{TRAINING_JOB}.Tags") or []):
        if not isinstance(tag, Mapping) or set(tag) != {"Key", "Value"} or not all(
                isinstance(part, str) for part in tag.values()):
            raise refuse(f"{TRAINING_JOB}.Tags[{index}]", "must be {Key: <string>, Value: <string>}")
