"""A PEM private key printed over several lines, as a job's output gives it a line at a time, is hidden whole: the
BEGIN line, the base64 body and the END line become one line saying so, per rank where ranks share an output."""

from __future__ import annotations

import base64
import os

import pytest

from orchestrator.redact import MASK, MAX_PRIVATE_KEY_LINES, PrivateKeyLines, mask_text


def fake_key(kind: str = "RSA", body_lines: int = 25) -> list[str]:
    """A key as `openssl` prints it: random base64, 64 characters a line."""
    body = base64.b64encode(os.urandom(48 * body_lines)).decode()
    return [f"-----BEGIN {kind}PRIVATE KEY-----", *(body[at:at + 64] for at in range(0, len(body), 64)),
            f"-----END {kind}PRIVATE KEY-----"]


def shown(lines: list[str], keys: PrivateKeyLines | None = None) -> list[str]:
    keys = keys or PrivateKeyLines(mask_text)
    return [text for line in lines if (text := keys.line(line)) is not None] + keys.end()


@pytest.mark.parametrize("kind", ["RSA ", "OPENSSH ", "", "EC ", "ENCRYPTED ", "DSA ", "PGP "])
def test_every_line_of_a_key_becomes_one_line_saying_it_was_hidden(kind):
    key = fake_key(kind)
    if kind == "PGP ":
        key = [line.replace("KEY-----", "KEY BLOCK-----") for line in key]

    assert shown(["loading", *key, "done"]) == ["loading", f"{MASK} (a private key: {len(key)} lines hidden)",
                                                "done"]


def test_what_came_before_begin_and_after_end_on_their_lines_stays():
    key = fake_key()
    first, last = f"key: {key[0]}", f'{key[-1]}" loaded, --db-password hunter22'

    assert shown([first, *key[1:-1], last]) == [
        f"key: {MASK} (a private key: {len(key)} lines hidden)\" loaded, --db-password {MASK}"]


def test_a_key_whole_on_one_line_is_masked_there():
    assert shown(["pem=" + "\\n".join(fake_key(body_lines=2)), "next"]) == [f"pem={MASK}", "next"]


def test_each_ranks_key_hides_only_that_ranks_lines():
    """mpirun --tag-output interleaves the ranks of a host: rank 3's key hides none of rank 0's lines."""
    three, zero = "[1,mpirank:3,algo-1]<stdout>:", "[1,mpirank:0,algo-1]<stdout>:"
    key = fake_key(body_lines=4)
    lines = []
    for number, line in enumerate(key):
        lines += [three + line, f"{zero}step {number}", f"[rank1]:loss={number}"]

    assert shown(lines) == [
        *(line for number in range(len(key) - 1) for line in (f"{zero}step {number}", f"[rank1]:loss={number}")),
        f"{three}{MASK} (a private key: {len(key)} lines hidden)", f"{zero}step {len(key) - 1}",
        f"[rank1]:loss={len(key) - 1}"]


def test_a_begin_line_without_end_stops_masking_at_the_cap_and_says_so():
    lines = ["-----BEGIN PRIVATE KEY-----", *(f"line {n}" for n in range(MAX_PRIVATE_KEY_LINES + 5))]

    result = shown(lines)

    assert result[0].startswith(f"{MASK} ({MAX_PRIVATE_KEY_LINES} lines hidden from a private key's BEGIN line: "
                                f"no END line within {MAX_PRIVATE_KEY_LINES} lines")
    assert result[1:] == [f"line {n}" for n in range(MAX_PRIVATE_KEY_LINES - 1, MAX_PRIVATE_KEY_LINES + 5)]


def test_a_key_cut_off_by_the_end_of_the_output_stays_hidden_and_is_said():
    key = fake_key()

    result = shown(["[rank2]:" + key[0], *("[rank2]:" + line for line in key[1:10])])

    assert result == [f"[rank2]:{MASK} (10 lines hidden from a private key's BEGIN line: the output ended before "
                      "its END line)"]


def test_a_key_that_follows_another_on_its_end_line_is_hidden_too():
    first, second = fake_key(body_lines=2), fake_key("EC ", body_lines=2)

    assert shown([*first[:-1], first[-1] + " next: " + second[0], *second[1:]]) == [
        f"{MASK} (a private key: 4 lines hidden)", f" next: {MASK} (a private key: 4 lines hidden)"]


@pytest.mark.parametrize("where", ["begin", "end", "both"])
def test_a_key_whose_begin_or_end_line_holds_an_invisible_character_is_hidden_whole(where):
    """plain_text shows an invisible character as `<U+200B>` where it was: inside a BEGIN line, before, the key was
    not recognised and its body was shown line by line."""
    key = fake_key(body_lines=4)
    if where in ("begin", "both"):
        key[0] = key[0].replace("PRIVATE", "PRI<U+200B>VATE")
    if where in ("end", "both"):
        key[-1] = key[-1].replace("PRIVATE", "PRI<U+200B>VATE")

    assert shown(["loading", *key, "done"]) == ["loading", f"{MASK} (a private key: {len(key)} lines hidden)",
                                                "done"]
