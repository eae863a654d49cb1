"""bcb, the BigCodeBench harness in Rust, installed as a wheel.

The work is done by the ``bcb`` executable that the wheel installs next to Python's console
scripts; this package only finds it (``find_bcb_bin``) and hands commands to it.
"""

import os
import shutil
import sys
import sysconfig

__all__ = ["find_bcb_bin"]

_EXE = "bcb"


def find_bcb_bin() -> str:
    """The path of the ``bcb`` executable installed with this package."""
    candidates = []
    # The console script that runs us sits in the same scripts directory as ``bcb``.
    if sys.argv and sys.argv[0]:
        candidates.append(os.path.dirname(os.path.abspath(sys.argv[0])))
    candidates.append(sysconfig.get_path("scripts"))
    # ``pip install --user``: the user scheme's scripts directory.
    try:
        candidates.append(sysconfig.get_path("scripts", scheme="posix_user"))
    except KeyError:
        pass
    for directory in candidates:
        path = os.path.join(directory, _EXE)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(_EXE)
    if found:
        return found
    raise FileNotFoundError(
        "the bcb executable is not installed next to this package's scripts "
        f"(looked in {', '.join(candidates)} and PATH)\n"
        "hint: reinstall the wheel: pip install --force-reinstall bcb"
    )
