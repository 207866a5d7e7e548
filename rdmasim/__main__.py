"""``python -m rdmasim``: the same command line as ``rdmasim`` (see :mod:`rdmasim.cli`)."""

from __future__ import annotations

import sys

from rdmasim.cli import main

if __name__ == "__main__":
    sys.exit(main())
