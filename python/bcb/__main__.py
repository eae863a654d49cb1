"""``python -m bcb ARGS`` runs ``bcb ARGS``."""

import os
import sys

from . import find_bcb_bin

if __name__ == "__main__":
    bcb = find_bcb_bin()
    os.execv(bcb, [bcb, *sys.argv[1:]])
