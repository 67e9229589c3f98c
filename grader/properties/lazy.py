"""Hypothesis, imported when a case is first drawn, not when the suites are.

Grading a file that passes every test replays the kept cases (grader.grading.cases) and never draws one: importing
Hypothesis and building the strategies would be about half of a fresh grader's imports. So a suite names its
strategies through ``st`` and ``S`` below, which import ``hypothesis.strategies`` and
``grader.properties.strategies`` at their first use, builds each property's strategy in a function (see
Property.strategy), and defines its own composite strategies with ``composite``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any


class LazyModule:
    """Stands for a module, imported when one of its names is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


def composite(function: Callable[..., Any]) -> Callable[..., Any]:
    """hypothesis.strategies.composite, applied when the strategy is first built."""
    built: list[Callable[..., Any]] = []

    @functools.wraps(function)
    def strategy(*args: Any, **kwargs: Any) -> Any:
        if not built:
            from hypothesis import strategies

            built.append(strategies.composite(function))
        return built[0](*args, **kwargs)

    return strategy


if TYPE_CHECKING:
    from hypothesis import strategies as st

    from grader.properties import strategies as S
else:
    st, S = LazyModule("hypothesis.strategies"), LazyModule("grader.properties.strategies")

__all__ = ["S", "LazyModule", "composite", "st"]
