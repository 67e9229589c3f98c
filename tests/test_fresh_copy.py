"""Kept answers are handed out as fresh copies (grader.sandbox.calls.fresh_copy): the same values as
copy.deepcopy gives, sharing nothing a caller could change, on real answers of a real file and on odd values."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.sandbox.calls import HelperCall, Returned, fresh_copy
from grader.sandbox.wire import AsSent, Numeric, Opaque, Sequence


def same(a: Any, b: Any) -> bool:
    """Equal values, of the same types, all the way down (arrays bitwise, with their dtype and shape)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b or (a != a and b != b)


def arrays_in(value: Any) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, tuple):
        return [a for item in value for a in arrays_in(item)]
    if isinstance(value, dict):
        return [a for item in value.values() for a in arrays_in(item)]
    if dataclasses.is_dataclass(value):
        return [a for f in dataclasses.fields(value) for a in arrays_in(getattr(value, f.name))]
    return []


def odd_answer() -> Returned:
    value = Sequence((Numeric(np.array([1.0, np.nan]), "f", "ndarray"), None, Opaque("a str: 'x'"),
                      Numeric(np.array(3.0), "i", "int")), "tuple", 5)
    helper = HelperCall("contact_time_grains", (AsSent(np.zeros((2, 2)), "f", "ndarray"),),
                        {"r": Numeric(np.array(0.5), "f", "float")}, Numeric(np.array(1e300), "f", "float64"), None)
    return Returned(value, (Numeric(np.arange(6.0).reshape(2, 3).T, "f", "ndarray"), 7, "s"), (helper,), 40, 0.25)


def check(kept: Returned) -> None:
    handed = fresh_copy(kept)
    assert same(handed, copy.deepcopy(kept)) and same(handed, kept)
    theirs, ours = arrays_in(handed), arrays_in(kept)
    assert len(theirs) == len(ours)
    for mine, original in zip(theirs, ours):
        assert mine is not original and not np.shares_memory(mine, original)
        before = original.copy()
        mine[...] = -1.0  # the caller changes its copy: the kept answer is as it came
        assert np.array_equal(original, before, equal_nan=True)
    for got, kept_helper in zip(handed.helper_calls, kept.helper_calls):
        assert got.kwargs is not kept_helper.kwargs


def test_an_odd_answer_is_copied_as_deepcopy_copies_it() -> None:
    check(odd_answer())


def test_the_answers_of_a_real_grading_are_copied_as_deepcopy_copies_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer of a correct file to the tests of contact_solve_grains and update (the helper calls an answer
    may carry are in the odd answer above: a passing file's are not recorded)."""
    from grader.grading.runner import GradeOptions, grade_file
    from grader.sandbox import client

    kept: list[Returned] = []
    call = client.Sandbox._call

    def keeping(self: Any, *args: Any) -> Any:
        kept.append(call(self, *args))
        return kept[-1]

    monkeypatch.setattr(client.Sandbox, "_call", keeping)
    textbook = Path(__file__).parent / "submissions" / "correct_textbook.py"
    assert grade_file(textbook, GradeOptions(only=("contact_solve_grains", "update"), selftest=False)).score > 0
    assert len(kept) > 50
    for answer in kept:
        check(answer)


def test_a_remembered_answer_is_kept_as_the_file_gave_it_whoever_changes_what_it_was_handed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The grading's box remembers its answers (Sandbox(remember=True)): the first caller's answer and the kept one
    share no array, so a caller changing its arrays changes nothing the next caller of the same case gets."""
    from grader.sandbox import client

    made: list[str] = []
    call = client.Sandbox._call

    def counted(self: Any, name: str, *args: Any) -> Any:
        made.append(name)
        return call(self, name, *args)

    monkeypatch.setattr(client.Sandbox, "_call", counted)
    textbook = Path(__file__).parent / "submissions" / "correct_textbook.py"
    case = (np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([-1.0, 0.0]), 1.0, 2.0, 0.9)
    with client.Sandbox(textbook, remember=True) as box:
        given = arrays_in(box.call("contact_solve_grains", *case))
        before = [a.copy() for a in given]
        for a in given:
            a[...] = -7.0  # a careless property scribbles over its answer
        again = arrays_in(box.call("contact_solve_grains", *case))
    assert made == ["contact_solve_grains"]  # the second answer is the remembered one
    assert len(given) >= 2 and len(again) == len(before)
    for mine, original in zip(again, before):
        assert np.array_equal(mine, original) and not np.array_equal(mine, np.full_like(mine, -7.0))
