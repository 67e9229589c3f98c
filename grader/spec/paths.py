"""Where the grader's own files are, declared once (modules sit at different depths)."""

from __future__ import annotations

from pathlib import Path

#: The ``grader`` package folder.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The folder holding ``grader/`` and ``reference/``: a checkout, a kit or a Gradescope bundle.
PACKAGE_ROOT = PACKAGE_DIR.parent
