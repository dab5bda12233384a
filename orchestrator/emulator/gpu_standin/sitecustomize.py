"""Loads smtrain's CPU stand-in for CUDA into this Python process (``site`` imports this module at start-up).

With ``SMTRAIN_GPU_STANDIN`` set, torch is patched right after it is first imported; torch itself is never
imported here, so processes that do not use it pay nothing. Without the variable nothing changes. Either way the
``sitecustomize`` that this one shadows (e.g. a distribution's or a user's; ``../shadowed_site.py`` says which)
runs afterwards, as it would have without the stand-in.
"""

import os


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
    """The one rule, in ../shadowed_site.py, loaded by its path: this folder is all a training process has."""
    from importlib.util import module_from_spec, spec_from_file_location

    shared = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "shadowed_site.py")
    spec = spec_from_file_location("_smtrain_shadowed_site", shared)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run_shadowed_sitecustomize(__file__)


_arm_standin()
_run_shadowed_sitecustomize()
