"""The fixes of SageMaker's ClientError FailureReasons whose answer lies in the job's own description, not in the
reason's words: the image's region against the job's, the KMS keys the job names, the file systems it mounts. A
fix that names them (`the image is in us-west-2's ECR and the job ran in us-east-1`) is one the user can act on;
one that lists every possibility is a search."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

IMAGE_PULL = re.compile(r"Cannot pull\b|manifest unknown")
KMS_REFUSED = re.compile(r"(?=.*\bKMS\b|.*\bkms:)(?=.*(AccessDenied|not authorized|is not accessible|"
                         r"[Dd]isabled|pending deletion|NotFoundException))", re.DOTALL)
"""A KMS key the job names that SageMaker could not use for the volumes or the output: refused to the execution
role, disabled, deleted, or not found in the job's region."""
MOUNT_FAILED = re.compile(r"Failed to mount")
"""An FSx for Lustre or EFS channel (FileSystemDataSource) SageMaker could not mount on the instances."""
_ECR_IMAGE = re.compile(r"^\d{12}\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com")
_ARN_REGION = re.compile(r"^arn:[\w-]+:sagemaker:(?P<region>[a-z0-9-]+):")


def image_pull_fix(described: Mapping[str, Any]) -> str:
    """The image's ECR region where it is not the job's (SageMaker pulls from the job's region only), else what
    else keeps an image from being pulled."""
    image = (described.get("AlgorithmSpecification") or {}).get("TrainingImage") or ""
    pulled_from = _ECR_IMAGE.match(image)
    runs_in = _ARN_REGION.match(described.get("TrainingJobArn") or "")
    if pulled_from and runs_in and pulled_from["region"] != runs_in["region"]:
        return (f"the image is in {pulled_from['region']}'s ECR ({image}) and the job ran in {runs_in['region']}: "
                "SageMaker pulls a training image from the job's region only; push (or replicate) the image to "
                f"{runs_in['region']}'s ECR and give that image_uri, or submit the job in {pulled_from['region']} "
                "(--region)")
    return ("SageMaker could not pull or start the training image: check that image_uri exists in the job's region (an "
            "ECR image is pulled from the job's region only: `aws ecr describe-images --region REGION ...`), that the "
            "execution role may pull it (ecr:GetAuthorizationToken, ecr:BatchGetImage, ecr:GetDownloadUrlForLayer; a "
            "repository in another account also needs its repository policy to allow the role), and that it fits "
            "instance.volume_size_gb")


def kms_key_fix(described: Mapping[str, Any]) -> str:
    """The keys the job names, by the spec field that set each, and what the execution role needs of them."""
    keys = {"volume_kms_key": (described.get("ResourceConfig") or {}).get("VolumeKmsKeyId"),
            "output_kms_key": (described.get("OutputDataConfig") or {}).get("KmsKeyId")}
    named = ", ".join(f"{field} {key}" for field, key in keys.items() if key)
    which = f"the job's KMS keys ({named})" if named else "a KMS key the job uses (volume_kms_key, output_kms_key)"
    return (f"SageMaker could not use {which} with the execution role: let the key policy and the role's policy "
            "allow the role kms:CreateGrant, kms:Decrypt, kms:GenerateDataKey and kms:DescribeKey on it, and check "
            "that the key is enabled and in the job's region (a key of another account also needs that account's key "
            "policy to allow the role)")


def file_system_mount_fix(described: Mapping[str, Any]) -> str:
    """The file systems the job's channels mount, and what a mount needs: the file system's VPC, a subnet it can
    be reached from, its port open, a directory path that exists."""
    mounts = [f"{source.get('FileSystemType', '')} {source.get('FileSystemId', '')}:{source.get('DirectoryPath', '')}"
              for channel in described.get("InputDataConfig") or []
              if (source := (channel.get("DataSource") or {}).get("FileSystemDataSource"))]
    which = f" ({', '.join(mount.strip() for mount in mounts)})" if mounts else ""
    return (f"SageMaker could not mount the job's file system{which} on the instances: run the job in the file "
            "system's VPC (network.subnets: for FSx for Lustre, a subnet in its Availability Zone), with "
            "network.security_group_ids that reach it (EFS: TCP 2049; FSx for Lustre: TCP 988 and 1018-1023, from "
            "the group itself), and give a directory path that exists (FSx for Lustre: it starts with the file "
            "system's mount name, /MOUNTNAME/...)")
