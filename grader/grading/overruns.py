"""Shrinking candidates too short to be a case, told at once instead of drawn (Hypothesis is imported here).

While shrinking, Hypothesis tries deleting a few choices of the failing case. A property's cases take a fixed
number of choices (or at least some number: Property.choices), so every such candidate runs out of choices
("overruns") after most of a case is drawn: two thirds of the candidates, and a third of a failing property's
time. The strategy below ends such a candidate before its first draw, with the overrun it would have met. The
shrinker only reads the outcome, so it takes the same steps and reports the same case (tests/test_cases.py
compares them).
"""

from __future__ import annotations

from typing import Any

from hypothesis.strategies import SearchStrategy

from grader.properties.strategies import built


class _AtLeast(SearchStrategy):
    """``inner``, whose cases take at least ``choices`` choices; with the same label and spans (it draws no span of
    its own)."""

    def __init__(self, inner: SearchStrategy, choices: int) -> None:
        super().__init__()
        self.inner, self.choices = inner, choices

    def calc_label(self) -> int:
        return self.inner.label

    def do_validate(self) -> None:
        self.inner.validate()

    def calc_is_empty(self, recur: Any) -> bool:
        return bool(recur(self.inner))

    def calc_has_reusable_values(self, recur: Any) -> bool:
        return bool(recur(self.inner))

    def calc_is_cacheable(self, recur: Any) -> bool:
        return bool(recur(self.inner))

    def do_draw(self, data: Any) -> Any:
        allowed, drawn = getattr(data, "max_choices", None), getattr(data, "nodes", None)
        if allowed is not None and drawn is not None and allowed - len(drawn) < self.choices:
            data.mark_overrun()
        return self.inner.do_draw(data)


def at_least(strategy: SearchStrategy, choices: int) -> SearchStrategy:
    """``strategy`` for a search whose candidates with fewer than ``choices`` choices left end at once (0: as is)."""
    inner = built(strategy)
    if choices <= 0 or type(inner).__name__ in ("LazyStrategy", "DeferredStrategy"):
        return strategy  # a wrapper drawn from inside would open a span of its own: the shrinker's steps would change
    return _AtLeast(inner, choices)
