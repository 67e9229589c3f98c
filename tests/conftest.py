"""Shared test settings: Hypothesis without a database, without deadlines
(CI machines are slow and uneven), and derandomized on CI so that a red run
can be reproduced."""

import os

from hypothesis import settings

settings.register_profile("default", database=None, deadline=None)
settings.register_profile("ci", database=None, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

#: The corpora are graded whole with GRANULAR_FULL_CORPUS=1 (about fifteen more minutes on two cores).
#: Otherwise CI grades a fixed sample that covers every function and every kind of file; the others
#: are reported as skipped, with this reason.
FULL_CORPUS = os.environ.get("GRANULAR_FULL_CORPUS") == "1"
SAMPLE_REASON = "not in CI's sample of the corpus; GRANULAR_FULL_CORPUS=1 grades every file"


def corpus_params(items, ids, sample):
    """pytest params of ``items``: those whose id is in ``sample`` always run, the rest only with
    GRANULAR_FULL_CORPUS=1."""
    import pytest

    unknown = set(sample) - set(ids)
    assert not unknown, f"the corpus sample names files that do not exist: {sorted(unknown)}"
    return [pytest.param(*(item if isinstance(item, tuple) else (item,)), id=name,
                         marks=() if FULL_CORPUS or name in sample else pytest.mark.skip(reason=SAMPLE_REASON))
            for item, name in zip(items, ids)]
