"""Loads smtrain's CPU stand-in for CUDA into this Python process (``site`` imports this module at start-up).

With ``SMTRAIN_GPU_STANDIN`` set, torch is patched right after it is first imported; torch itself is never
imported here, so processes that do not use it pay nothing. Without the variable nothing changes. Either way the
``sitecustomize`` that this one shadows (the next one on ``sys.path``, e.g. a distribution's or a user's) runs
afterwards, as it would have without the stand-in.
"""

import os
import sys


def _arm_standin() -> None:
    from smtrain_gpu_standin import env, hook, smddp_env

    try:
        settings = env.read(os.environ)
    except env.SettingsError as error:
        # Without the stand-in the script would fail later and obscurely; stop every process now, with the fix.
        raise SystemExit(f"smtrain CPU stand-in for CUDA: {error}") from None
    if settings is not None and smddp_env.launched_by_smddp(os.environ):
        smddp_env.fill(os.environ)  # before the script runs, as smddprun does
    if settings is not None:
        hook.when_imported("torch", lambda _torch: _apply_patches(settings))


def _apply_patches(settings) -> None:
    from smtrain_gpu_standin import patches

    patches.apply(settings)


def _run_shadowed_sitecustomize() -> None:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.realpath(os.path.dirname(__file__))
    others = [entry for entry in sys.path if os.path.realpath(entry or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_arm_standin()
_run_shadowed_sitecustomize()
