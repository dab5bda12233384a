"""The small commands and the fast path: `--help` and `validate` never import the SDK, boto3 or torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.catalog import hourly_price, lookup

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"


def test_validate_accepts_every_example_and_shows_world_size():
    result = CliRunner().invoke(main, ["validate", *map(str, sorted((REPO / "job_specs").glob("*.yaml")))])
    assert result.exit_code == 0, result.output
    assert "mode mpi, 3 x ml.c5.2xlarge, 2 processes per host (mpirun) -> world size 6" in result.output
    assert "unverified (allowed by allow_unverified)" in result.output


def test_validate_override_changes_the_spec():
    result = CliRunner().invoke(main, ["validate", str(EXAMPLE), "--set", "instance.count=4"])
    assert result.exit_code == 0
    assert "4 x ml.c5.2xlarge" in result.output and "world size 4" in result.output


def test_schema_is_json_schema_with_field_descriptions():
    result = CliRunner().invoke(main, ["schema"])
    document = json.loads(result.stdout)
    assert document["additionalProperties"] is False
    assert "Base job name" in document["properties"]["name"]["description"]
    assert document["$defs"]["Instance"]["properties"]["count"]["description"]


def test_instances_table_and_filters():
    result = CliRunner().invoke(main, ["instances", "--family", "p4d", "-o", "json"])
    [entry] = json.loads(result.stdout)
    assert entry["name"] == "ml.p4d.24xlarge" and entry["accelerators"] == 8 and entry["efa"] is True
    text = CliRunner().invoke(main, ["instances", "--accelerator", "trainium"]).output
    assert "ml.trn1.32xlarge" in text and "32 cores" in text and "ml.c5" not in text


def test_instances_family_as_a_user_may_write_it_or_an_unknown_one_with_the_families():
    spelled = CliRunner().invoke(main, ["instances", "--family", "ML.P4D", "-o", "json"])
    [entry] = json.loads(spelled.stdout)
    assert entry["name"] == "ml.p4d.24xlarge"

    unknown = CliRunner().invoke(main, ["instances", "--family", "g55"])
    assert unknown.exit_code == 2, unknown.output
    assert "'g55' is not a family of smtrain's instance catalog; did you mean g5?" in unknown.stderr
    assert "p4d, p4de, p5" in unknown.stderr


def _all_modules_loaded_by(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Every module `smtrain ARGS` has imported when it exits, in a fresh interpreter."""
    script = ("import sys\nfrom orchestrator.cli.main import main\n"
              "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
              "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=600,
                          env=env)
    return set(done.stderr.split())


def _modules_loaded_by(*args: str) -> set[str]:
    return {module.split(".")[0] for module in _all_modules_loaded_by(*args)}


def test_help_and_validate_never_import_heavy_libraries():
    heavy = {"sagemaker", "boto3", "botocore", "torch", "rich"}
    assert not heavy & _modules_loaded_by("--help")
    assert not heavy & _modules_loaded_by("validate", str(EXAMPLE))
    assert not heavy & _modules_loaded_by("validate", str(EXAMPLE), "--set", "instance.count=0")


def test_validate_and_plan_import_only_what_their_answer_needs(tmp_path, monkeypatch):
    """A spec (or the environment) that names the region, role and output path needs no AWS library to plan:
    no boto3 session for the region, no tuning, no emulator; nor the job handle with its log, progress and
    root-cause readers, nor rich for a JSON answer, nor psutil (packing reads Linux's mount table itself), nor
    logging (only importing the SDK configures it); validate neither builds a plan nor imports tarfile."""
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
                   "AWS_EC2_METADATA_DISABLED": "true"}
    region_in_environment = {**environment, "AWS_REGION": "eu-west-1"}
    runs = {
        "validate": _all_modules_loaded_by("validate", str(EXAMPLE), env=environment),
        "plan, region in the spec": _all_modules_loaded_by("plan", str(EXAMPLE), "--set", "region=us-west-2",
                                                           "-o", "json", env=environment),
        "plan, region from $AWS_REGION": _all_modules_loaded_by("plan", str(EXAMPLE), "-o", "json",
                                                                env=region_in_environment),
        "plan of several files": _all_modules_loaded_by("plan", str(EXAMPLE), str(EXAMPLE), "-o", "json",
                                                        env=region_in_environment),
    }
    for run, modules in runs.items():
        assert "orchestrator.specs.model" in modules, f"{run}: did not run"
        unneeded = {module for module in modules
                    if module.split(".")[0] in {"boto3", "botocore", "sagemaker", "torch", "rich", "psutil",
                                                 "logging"}
                    or module.startswith(("orchestrator.emulator", "orchestrator.cloud.tuning",
                                          "orchestrator.backends", "orchestrator.observing"))}
        assert not unneeded, f"{run} imported {sorted(unneeded)[:8]}"
        assert run == "validate" or "orchestrator.planning.plan" in modules, f"{run}: planned nothing"
    # validate reads the role and output path rules and the packing limit, but builds and packs nothing
    assert not {"orchestrator.planning.plan", "tarfile"} & runs["validate"], "validate planned or packed"


def test_user_errors_have_no_traceback():
    done = subprocess.run([sys.executable, "-m", "orchestrator", "submit", str(EXAMPLE), "--set", "role=null"],
                          capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "no SageMaker execution role" in done.stderr and "To fix:" in done.stderr


def test_an_hourly_price_reads_the_same_in_instances_plan_and_status():
    # ml.g6.xlarge costs USD 1.1267/h: `instances` printed 1.127 (4 digits), `plan` 1.1267, `status` the float.
    listed = CliRunner().invoke(main, ["instances", "--family", "g6"], env={"COLUMNS": "200"}).output
    planned = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--set", "instance.type=ml.g6.xlarge",
                                        "--set", "instance.count=1", "--set", "distribution.mode=none"]).output

    [row] = [line for line in listed.splitlines() if line.split()[:1] == ["ml.g6.xlarge"]]
    assert row.split()[-1] == "1.1267"
    assert "= 1.1267/h x 1 x " in planned
    assert hourly_price(lookup("ml.g6.xlarge").price_per_hour) == "1.1267" and hourly_price(98.32) == "98.32"


def test_every_json_error_has_the_keys_the_readme_names(monkeypatch, tmp_path):
    """Bad usage and Ctrl-C left out `column`: a script reading the documented shape met a KeyError there."""
    from orchestrator.cli import jobs

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(jobs, "resolve_job", interrupted)
    results = [CliRunner().invoke(main, args) for args in (
        ["plan", str(tmp_path / "nope.yaml"), "-o", "json"],
        ["status", "tiny-1", "--no-such-flag", "-o", "json"],
        ["status", "tiny-1", "-o", "json"],
    )]

    assert [result.exit_code for result in results] == [2, 2, 130]
    for result in results:
        assert set(json.loads(result.stdout)["error"]) == {"type", "message", "fix", "file", "line", "column", "field"}


def test_validate_help_describes_the_json_it_prints():
    """validate's --help promised `{"error": {...}}` for errors, as other commands print them; validate prints its
    list of reports instead, a missing file's error among its problems."""
    result = CliRunner().invoke(main, ["validate", "no-such-spec.yaml", "-o", "json"])
    [report] = json.loads(result.stdout)
    assert result.exit_code == 2 and report["valid"] is False
    help_text = " ".join(CliRunner().invoke(main, ["validate", "--help"]).output.split())
    assert '{"error"' not in help_text
    assert "[{" + ", ".join(f'"{key}"' for key in report) + "}]" in help_text
