"""Puts the run's installed requirements where the image's pip would have put them: into site-packages, after the
standard library (``site`` imports this module at start-up in every training process).

``SMTRAIN_OVERLAY_SITE`` names the overlay's site-packages (usercode.py). It goes, with its ``.pth`` files, right
before this interpreter's own site-packages: a requirement shadows what the environment has (as an upgrade in
the image replaces it), never the standard library (a backport such as ``dataclasses==0.6`` or ``typing`` lands
there in the image too, after the standard library, and is never imported). Then the ``sitecustomize`` this one
shadows runs as it would have (``../shadowed_site.py`` says which).
"""

import os
import site
import sys


def _place_overlay() -> None:
    overlay = os.environ.get("SMTRAIN_OVERLAY_SITE")
    if not overlay or not os.path.isdir(overlay):
        return
    before = list(sys.path)
    site.addsitedir(overlay, set(before))
    added = [entry for entry in sys.path if entry not in before]
    rest = [entry for entry in sys.path if entry not in added]
    own = {os.path.realpath(path) for path in [*site.getsitepackages(), site.getusersitepackages()]}
    at = next((index for index, entry in enumerate(rest) if os.path.realpath(entry) in own), len(rest))
    sys.path[:] = [*rest[:at], *added, *rest[at:]]


def _run_shadowed_sitecustomize() -> None:
    """The one rule, in ../shadowed_site.py, loaded by its path: this folder is all a training process has."""
    from importlib.util import module_from_spec, spec_from_file_location

    shared = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "shadowed_site.py")
    spec = spec_from_file_location("_smtrain_shadowed_site", shared)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run_shadowed_sitecustomize(__file__)


_place_overlay()
_run_shadowed_sitecustomize()
