"""`errors.in_keywords`, the one rewriter of the CLI's option names into the Python API's keywords: an API
function's errors (`naming_keywords`, its parameters) and a notebook run's notices (the local run's switches)."""

from __future__ import annotations

from orchestrator.emulator.run_options import switch_keywords
from orchestrator.errors import in_keywords


def test_a_local_run_s_switches_are_named_as_the_keywords_that_do_the_same():
    said = in_keywords("--link-inputs: linked. Turn it off with --no-gpu-standin; --exact-autocast keeps bfloat16",
                       switch_keywords())

    assert said == "link_inputs=True: linked. Turn it off with gpu_standin=False; exact_autocast=True keeps bfloat16"


def test_a_command_in_backticks_keeps_its_flags_for_a_notice_as_for_an_error():
    """Before, a notice's switches were replaced wherever they stood, inside a command to copy too
    (`smtrain local job.yaml gpu_standin=False`, which no shell runs); an error's keywords already kept them."""
    said = in_keywords("or run `smtrain local job.yaml --no-gpu-standin` in a terminal; --no-gpu-standin",
                       switch_keywords())

    assert said == "or run `smtrain local job.yaml --no-gpu-standin` in a terminal; gpu_standin=False"


def test_an_option_with_its_value_becomes_the_keyword_with_it_and_an_unmapped_one_stays():
    keywords = {"--backend": "backend=", "--no-gpu-standin": "gpu_standin=False"}

    assert in_keywords("pass --backend=local, not --no-gpu-standin=x or --region", keywords) == (
        'pass backend="local", not --no-gpu-standin=x or --region')
