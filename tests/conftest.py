"""Shared test settings: Hypothesis without a database, without deadlines
(CI machines are slow and uneven), and derandomized on CI so that a red run
can be reproduced."""

import os

from hypothesis import settings

settings.register_profile("default", database=None, deadline=None)
settings.register_profile("ci", database=None, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
