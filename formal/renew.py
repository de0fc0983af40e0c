"""Renew the staleness records (formal/staleness.json) after checking the theorems they name
against the changed code:  ``python formal/renew.py [group ...]``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.formal.staleness import renew  # noqa: E402

if __name__ == "__main__":
    changed = renew(sys.argv[1:] or None)
    print("renewed: " + (", ".join(changed) if changed else "nothing (every record matches)"))
