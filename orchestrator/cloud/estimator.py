"""The optional SDK v2 adapter: the real `sagemaker.pytorch.PyTorch` estimator for a plan.

Nothing on smtrain's own paths (plan, submit, status, logs) comes here; it serves the notebook's
`build_estimator` and the tests that hold smtrain's request against the one v2 sends. Needs `smtrain[sdk]`.
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.cloud.sdk import import_sagemaker, sagemaker_session
from orchestrator.errors import CapabilityError
from orchestrator.planning.estimator import training_inputs
from orchestrator.planning.plan import Plan


def sdk_kwargs(job_plan: Plan) -> dict[str, Any]:
    """`plan.estimator_kwargs`, plus the plan's image as `image_uri` where v2 cannot pick that image itself.

    v2's image table ends at 2.8.0, and v2 refuses SMDDP past 2.2.0 although the 2.3-2.5 images carry it.
    With `image_uri` given v2 sends that image and skips those two checks; every other key of the request is
    still v2's own (tests/referees/sdk holds the two requests key for key).

    Raises:
        EnvironmentProblem: SDK v2 is not installed (v3 or nothing is).
    """
    kwargs = dict(job_plan.estimator_kwargs)
    if "image_uri" in kwargs:
        return kwargs
    sagemaker = import_sagemaker()
    image = job_plan.create_training_job_request["AlgorithmSpecification"]["TrainingImage"]
    smddp = job_plan.spec.distribution.rules.runs_smddp
    smddp_versions = sagemaker.fw_utils.SM_DATAPARALLEL_SUPPORTED_FRAMEWORK_VERSIONS["pytorch"]
    if _v2_image(sagemaker, job_plan) != image or (smddp and kwargs["framework_version"] not in smddp_versions):
        kwargs["image_uri"] = image
    return kwargs


def _v2_image(sagemaker: Any, job_plan: Plan) -> str | None:
    kwargs = job_plan.estimator_kwargs
    try:
        return sagemaker.image_uris.retrieve(
            "pytorch", region=job_plan.target.region, version=kwargs["framework_version"],
            py_version=kwargs["py_version"], instance_type=job_plan.spec.instance_type, image_scope="training")
    except ValueError:  # "Unsupported pytorch version: 2.10.0 ..."
        return None


def build(job_plan: Plan, session: Any) -> Any:
    """The real SDK v2 PyTorch estimator that sends the plan's request, on `session`.

    Raises:
        CapabilityError: the SDK's constructor refused the combination.
        EnvironmentProblem: SDK v2 is not installed (v3 or nothing is).
    """
    return build_from(sdk_kwargs(job_plan), session)


def build_from(kwargs: dict[str, Any], session: Any) -> Any:
    """`sagemaker.pytorch.PyTorch(**kwargs)` on `session`.

    Raises:
        CapabilityError: the SDK's constructor refused the combination.
    """
    sagemaker = import_sagemaker()
    try:
        # A copy: the SDK writes its own sagemaker_* keys into the hyperparameters dict it is given.
        return sagemaker.pytorch.PyTorch(**_sdk_objects(sagemaker, copy.deepcopy(kwargs)), sagemaker_session=session)
    except ValueError as exc:
        raise CapabilityError(f"SageMaker SDK v2 refused this job: {exc}",
                              fix="smtrain can still submit it (`smtrain submit`)") from None


def _sdk_objects(sagemaker: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments v2 takes as objects: its InstanceGroup (the distribution names the same objects) and
    TensorBoardOutputConfig."""
    if "instance_groups" in kwargs:
        groups = [sagemaker.instance_group.InstanceGroup(**group) for group in kwargs["instance_groups"]]
        kwargs["instance_groups"] = groups
        distribution = kwargs.get("distribution") or {}
        if "instance_groups" in distribution:
            distribution["instance_groups"] = [group for group in groups
                                               if group.instance_group_name in distribution["instance_groups"]]
    if "tensorboard_output_config" in kwargs:
        kwargs["tensorboard_output_config"] = sagemaker.debugger.TensorBoardOutputConfig(
            **kwargs["tensorboard_output_config"])
    return kwargs


def fit_arguments(job_plan: Plan) -> dict[str, Any]:
    """`fit(...)`'s arguments for the plan: `inputs`, each channel a v2 `TrainingInput`, and `experiment_config`."""
    sagemaker = import_sagemaker()
    inputs = {name: sagemaker.inputs.TrainingInput(**arguments)
              for name, arguments in training_inputs(job_plan.spec).items()}
    experiment = job_plan.spec.experiment
    names = {"ExperimentName": experiment.experiment_name, "TrialName": experiment.trial_name,
             "TrialComponentDisplayName": experiment.trial_component_display_name,
             "RunName": experiment.run_name} if experiment else {}
    return {"inputs": inputs or None, "experiment_config": {key: value for key, value in names.items() if value}
            or None}


def estimator_for(job_plan: Plan, session: Any | None = None, boto: Any | None = None) -> Any:
    """The plan's v2 estimator on `session`, else on a quiet session for its region and bucket."""
    from orchestrator.cloud.sdk import boto_session

    session = session or sagemaker_session(boto or boto_session(job_plan.target.region), job_plan.target.bucket)
    return build(job_plan, session)
