"""A compiled module built against NumPy 1.x, imported where NumPy 2 is installed: NumPy 2 refuses it (`A module
that was compiled using NumPy 1.x cannot be run in NumPy 2.x as it may crash`, with the stack of the import), and
the module's import then fails with `AttributeError: _ARRAY_API not found` (pybind11) or `ImportError:
numpy.core.multiarray failed to import`. Most often a requirement in requirements.txt pulled in numpy 2 over the
image's NumPy 1.x, or an unpinned package's wheel was built against NumPy 1.x. The module is the innermost
installed package the import ran through before the error: NumPy's own frames are not it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from orchestrator.specs.image_packages import image_packages

_NUMPY_ABI_ERROR = re.compile(r"numpy\.(?:_?core)\.(?:multiarray|_multiarray_umath) failed to import|"
                              r"_ARRAY_API not found")
_PACKAGE_FRAME = re.compile(r'File "[^"]*/(?:site|dist)-packages/([A-Za-z_]\w*)[/.]')


def is_numpy_abi_error(text: str) -> bool:
    return _NUMPY_ABI_ERROR.search(text) is not None


def built_against_numpy1(lines: Sequence[str]) -> str | None:
    """The module whose import failed: the innermost installed package's frame (not NumPy's) before the first
    error line NumPy 2's refusal gave; None where no frame of a package precedes it."""
    package = None
    for line in lines:
        if _NUMPY_ABI_ERROR.search(line):
            return package
        if (frame := _PACKAGE_FRAME.search(line)) and frame[1] != "numpy":
            package = frame[1]
    return None


def numpy_abi_fix(lines: Sequence[str], framework_version: str | None) -> str:
    """Which module was built against NumPy 1.x, whether the image or requirements.txt brought it, and the two
    ways out: keep NumPy 1.x, or a build of the module for NumPy 2."""
    module = built_against_numpy1(lines)
    image = image_packages(framework_version) if framework_version else None
    shipped = image.by_module().get(module) if image and module else None
    named = f"`{module}`" if module else "a compiled module the script imports (the last package in the traceback)"
    if shipped is not None:
        imported_as = f" ({named})" if shipped.distribution != module else ""
        brought = (f"the PyTorch {framework_version} image's {shipped.distribution}{imported_as} was built against "
                   "NumPy 1.x, and NumPy 2 got installed over the image's (a requirement in requirements.txt that "
                   "needs numpy>=2)")
    else:
        brought = (f"{named} was compiled against NumPy 1.x and NumPy 2 is installed (a package in requirements.txt, "
                   "or the image, built against NumPy 1.x while a newer requirement pulled in numpy 2)")
    upgrade = f"upgrade {shipped.distribution if shipped else module}" if module else "upgrade that package"
    return (f"{brought}: pin `numpy<2` in requirements.txt in the source dir, or {upgrade} to a version built for "
            "NumPy 2 (pip's `Successfully installed ... numpy-2...` line in the log shows the install)")
