"""The grader's readers of the submission's answers (the properties' and the audit's), given any value the wire lets
through: they read it or fail the property (PropertyFailed), never raise anything else. A red team's forged integer
index once reached int(nan) in time_and_index and ended the whole grading with a grader error; this test then found a
tuple said to hold two items but sent with fewer (IndexError in vector_pair and in the audit's mct_of)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.grading import audit
from grader.properties import readers
from grader.properties.property import PropertyFailed
from grader.sandbox import wire
from grader.sandbox.calls import Returned

NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70))


@st.composite
def numerics(draw):
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    size = int(np.prod(shape))
    return {"shape": shape, "data": draw(st.lists(NUMBERS, min_size=size, max_size=size)),
            "kind": draw(st.sampled_from("biuf")), "type": draw(st.sampled_from(["ndarray", "int", "float", "x"]))}


described = st.recursive(
    st.one_of(numerics(), st.just({"none": True}), st.builds(lambda t: {"other": t}, st.text(max_size=5))),
    lambda inner: st.builds(lambda items, extra: {"seq": items, "len": len(items) + extra, "type": "tuple"},
                            st.lists(inner, max_size=3), st.integers(0, 2)),
    max_leaves=6)


@st.composite
def values(draw):
    """A decoded value, as the wire gives it (what the wire refuses never reaches a reader)."""
    obj = draw(described)
    try:
        return wire.decode_value(obj)
    except wire.MalformedReply:
        return None


def read_all(value, after):
    returned = Returned(value, tuple(after))
    readers.fmt(value)
    for read in (lambda: readers.one_float(returned, "f"), lambda: readers.vector(value, "f", "dv"),
                 lambda: readers.vector_pair(returned, "f"), lambda: readers.time_and_index(returned, 3, 4),
                 lambda: readers.state_after_update(Returned(value, tuple(after)), (3, 2), (3, 2)),
                 lambda: readers.unchanged(returned, (np.zeros(2), np.ones(2)), "contact_solve_wall")):
        try:
            read()
        except PropertyFailed:
            pass
    audit.time_of(value), audit.mct_of(value), audit.plain(value), audit.same_value(value, after[0])
    audit._vectors(value, 1), audit._vectors(value, 2)


@settings(max_examples=500, deadline=None)
@given(values(), st.lists(values(), min_size=6, max_size=6))
def test_the_readers_read_any_value_the_wire_lets_through_or_fail_the_property(value, after):
    read_all(value, after)
