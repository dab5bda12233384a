"""S3's rules for a general purpose bucket's name: the one check for the bucket of every s3:// URI a spec gives.

SageMaker's URI patterns accept `s3://My_Bucket/`; S3 has no such bucket, so the job would fail only after the
source was packed and uploaded (NoSuchBucket, or a channel that cannot be read). The rules are S3's
(docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html), less those that reserve suffixes for names
that do work in a URI: an access point alias (`-s3alias`, `--ol-s3`) and a directory bucket (`--x-s3`).
"""

from __future__ import annotations

import re

MIN_LENGTH, MAX_LENGTH = 3, 63
_CHARACTERS = re.compile(r"[a-z0-9.-]*")
_IP_ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+")
RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
"""Prefixes S3 keeps for itself: no bucket's name starts with them."""


def bucket_of(uri: str) -> str:
    """`s3://bucket/prefix/` -> `bucket`."""
    return uri.removeprefix("s3://").partition("/")[0]


def bucket_name_problem(bucket: str) -> str | None:
    """Which of S3's rules `bucket` breaks, in words, or None when S3 could have a bucket of that name."""
    if not MIN_LENGTH <= len(bucket) <= MAX_LENGTH:
        return f"is {len(bucket)} characters long; S3 bucket names are {MIN_LENGTH} to {MAX_LENGTH} characters long"
    if not _CHARACTERS.fullmatch(bucket):
        refused = sorted({char for char in bucket if not _CHARACTERS.fullmatch(char)})
        return (f"holds {', '.join(repr(char) for char in refused)}; S3 bucket names hold only lowercase letters, "
                "digits, dots and hyphens")
    if not (bucket[0].isalnum() and bucket[-1].isalnum()):
        return "must begin and end with a letter or digit"
    if ".." in bucket:
        return "has two dots in a row, which S3 refuses in a bucket name"
    if _IP_ADDRESS.fullmatch(bucket):
        return "is an IP address, which S3 refuses as a bucket name"
    reserved = next((prefix for prefix in RESERVED_PREFIXES if bucket.startswith(prefix)), None)
    if reserved is not None:
        return f"begins with {reserved!r}, a prefix S3 keeps for itself"
    return None


def bucket_like(bucket: str) -> str:
    """The bucket likely meant, for a fix: lowercased, other characters made hyphens, dots and hyphens not
    doubled, a reserved prefix dropped; `my-bucket` where that is no bucket name either (`s3://b/` would repeat
    the mistake)."""
    like = bucket.lower()
    like = next((like.removeprefix(prefix) for prefix in RESERVED_PREFIXES if like.startswith(prefix)), like)
    like = re.sub(r"\.{2,}", ".", re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9.-]", "-", like)))
    like = like.strip(".-")[:MAX_LENGTH].strip(".-")
    return like if bucket_name_problem(like) is None else "my-bucket"
