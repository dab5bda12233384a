"""The execution role cannot overwrite other jobs' work: it writes only under outputs/ and checkpoints/
(never code/, whose content-addressed tarballs a re-submit reuses), the bucket keeps old versions by default, and
image pulls are limited to the repositories of smtrain's image table."""

from __future__ import annotations

from typing import Any

from test_infra_template import TEMPLATE, _statements, template_reader

from orchestrator.specs.datafiles import load_data_file

BUCKET_OBJECTS = "${Bucket.Arn}/"


def _template() -> dict[str, Any]:
    return template_reader().load(str(TEMPLATE))


def _resources(statement: dict[str, Any]) -> list[str]:
    resources = statement["Resource"]
    resources = resources if isinstance(resources, list) else [resources]
    return [item["Fn::Sub"] if isinstance(item, dict) and "Fn::Sub" in item else item for item in resources]


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement["Action"]
    return set(actions if isinstance(actions, list) else [actions])


def _role_statements() -> list[dict[str, Any]]:
    return [statement for logical_id, statement in _statements(_template())
            if logical_id == "ExecutionPolicy" and statement.get("Effect") == "Allow"]


def test_the_role_writes_only_under_outputs_and_checkpoints():
    writes = [statement for statement in _role_statements()
              if _actions(statement) & {"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}]
    written = {resource for statement in writes for resource in _resources(statement)
               if resource.startswith(BUCKET_OBJECTS)}
    assert written == {BUCKET_OBJECTS + "outputs/*", BUCKET_OBJECTS + "checkpoints/*"}


def test_the_write_prefixes_are_the_ones_the_stack_hands_out():
    outputs = _template()["Outputs"]
    handed_out = {output["Value"]["Fn::Sub"] for output in outputs.values()
                  if isinstance(output.get("Value"), dict) and "Fn::Sub" in output["Value"]}
    assert {"s3://${Bucket}/outputs/", "s3://${Bucket}/checkpoints/"} <= handed_out


def test_versioning_is_on_by_default_and_old_versions_expire():
    template = _template()
    assert template["Parameters"]["EnableVersioning"]["Default"] == "true"
    rules = template["Resources"]["Bucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert any("NoncurrentVersionExpiration" in rule and "Prefix" not in rule for rule in rules)


def test_image_pulls_are_scoped_to_the_image_tables_repositories():
    table = load_data_file("images.yaml")
    repositories = {table["repository"], *(row.get("repository", table["repository"])
                                            for row in table["versions"].values())}
    [pull] = [statement for statement in _role_statements() if "ecr:BatchGetImage" in _actions(statement)]
    assert {resource.rsplit(":repository/", 1)[1] for resource in _resources(pull)} == repositories
