"""The metric line the orchestrator's regexes read, and the replica checksum."""

from __future__ import annotations

import re

import metrics
import torch

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS


def test_metric_line_format():
    assert metrics.metric_line(1, 40, 96, 0.1234564, 1520.34) == (
        "epoch=1 step=40/96 train_loss=0.123456 samples_per_sec=1520.3")


def test_metric_definitions_read_the_line_even_behind_an_mpi_prefix():
    line = "[1,mpirank:0,algo-1]<stdout>:" + metrics.metric_line(2, 96, 96, 1.5e-07, 99.0)
    found = {definition["Name"]: float(match.group(1)) for definition in DEFAULT_METRIC_DEFINITIONS
             if (match := re.search(definition["Regex"], line))}
    assert found == {"train:loss": 0.0, "train:samples_per_sec": 99.0, "train:epoch": 2.0}


def test_state_checksum_changes_with_any_bit_and_name():
    state = {"weight": torch.tensor([1.0, 2.0], dtype=torch.bfloat16), "bias": torch.zeros(0)}
    same = {"weight": state["weight"].clone(), "bias": torch.zeros(0)}
    flipped = {"weight": state["weight"].clone(), "bias": torch.zeros(0)}
    flipped["weight"].view(torch.int16)[1] ^= 1  # the lowest mantissa bit of one value
    renamed = {"w": state["weight"], "bias": torch.zeros(0)}
    assert metrics.state_checksum(state) == metrics.state_checksum(same)
    assert metrics.state_checksum(state) != metrics.state_checksum(flipped)
    assert metrics.state_checksum(state) != metrics.state_checksum(renamed)
