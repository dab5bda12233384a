"""Puts the run's installed requirements where the image's pip would have put them: into site-packages, after the
standard library (``site`` imports this module at start-up in every training process).

``SMTRAIN_OVERLAY_SITE`` names the overlay's site-packages (usercode.py). It goes, with its ``.pth`` files, right
before this interpreter's own site-packages: a requirement shadows what the environment has (as an upgrade in
the image replaces it), never the standard library (a backport such as ``dataclasses==0.6`` or ``typing`` lands
there in the image too, after the standard library, and is never imported). Then the ``sitecustomize`` this one
shadows, the next one on ``sys.path`` after this folder, runs as it would have.
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
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.realpath(os.path.dirname(__file__))
    positions = [index for index, entry in enumerate(sys.path) if os.path.realpath(entry or os.curdir) == here]
    later = sys.path[positions[-1] + 1:] if positions else list(sys.path)
    spec = PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_place_overlay()
_run_shadowed_sitecustomize()
