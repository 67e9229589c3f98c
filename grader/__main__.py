import os
import sys

# ``python -m grader`` puts the current folder first on the import path. A TA who grades from inside the
# submissions folder would then import a student's folder named reference, numpy or hypothesis as the grader's own
# code, outside every sandbox (a red team's reference/__init__.py ran as root). The folder stays only where this
# grader itself comes from (a checkout, run from its root).
_ours = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# (With -P, -I or PYTHONSAFEPATH, Python put nothing there: the first entry is then someone's choice, kept.)
if sys.path and not getattr(sys.flags, "safe_path", False) and os.path.realpath(sys.path[0] or os.getcwd()) != _ours:
    del sys.path[0]

from grader.commands.cli import main  # noqa: E402 - after the path is made safe

sys.exit(main())
