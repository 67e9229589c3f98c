"""The inputs Hypothesis draws for each property: drawn once per grader version, then replayed.

With derandomized settings and no example database, what ``find`` draws
depends only on the strategy, until the first case that fails: every file that
passes a property is tried on the same cases, in the same order. Drawing them
is about two thirds of a correct file's grading, so they are drawn once (a
``find`` whose condition always holds back) and kept, pickled, in a private
cache folder keyed by the grader's sources and the versions of Python,
Hypothesis and numpy. Grading replays them (see :mod:`grader.grading.search`);
only a property that fails goes back to Hypothesis, so the reported smallest
case is the one ``find`` gives.

The cache is read with an allow-listed unpickler (numpy arrays and the
properties' own case classes only): a tampered file can change which inputs
are tried, never run code. It is not used when hidden tests run under weak
isolation, where the submission might write it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import io
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.properties.property import Property
from grader.spec.paths import case_cache_folder, private_folder, source_digest

if TYPE_CHECKING:
    from hypothesis import settings

#: Modules whose dataclasses a case may hold (besides numpy arrays and builtins).
CASE_MODULES = ("grader.properties.", "grader.spec.")
_NUMPY_GLOBALS = {("numpy", "dtype"), ("numpy", "ndarray"), ("numpy.core.multiarray", "_reconstruct"),
                  ("numpy._core.multiarray", "_reconstruct")}



def version_key() -> str:
    """What the drawn cases depend on: the grader's sources and the versions of the libraries that draw them."""
    versions = f"{sys.version_info[:2]} hypothesis {_hypothesis_version()} numpy {np.__version__}"
    return hashlib.sha256(f"{source_digest()} {versions}".encode()).hexdigest()[:32]


def _hypothesis_version() -> str:
    """The version of the Hypothesis that would be imported, without importing it (a file that passes every test
    is spared that): a digest of its version.py. Not its install metadata, which may be missing (a vendored copy)
    or left over from another install."""
    found = importlib.util.find_spec("hypothesis")
    if found is not None and found.origin:
        try:
            return hashlib.sha256((Path(found.origin).parent / "version.py").read_bytes()).hexdigest()[:16]
        except OSError:
            pass
    import hypothesis

    return hypothesis.__version__


class CaseUnpickler(pickle.Unpickler):
    """Rebuilds numpy arrays and the properties' case dataclasses; refuses every other global."""

    #: The globals already allowed, found once per process (a replay loads some 2 600 cases, each naming a few).
    _allowed: dict[tuple[str, str], Any] = {}

    def find_class(self, module: str, name: str) -> Any:
        found = self._allowed.get((module, name))
        if found is None:
            found = self._allowed[(module, name)] = self._allowed_global(module, name)
        return found

    def _allowed_global(self, module: str, name: str) -> Any:
        if (module, name) in _NUMPY_GLOBALS:
            return super().find_class(module, name)
        if module.startswith(CASE_MODULES) and name.isidentifier():
            try:
                found = getattr(importlib.import_module(module), name, None)
            except ImportError:
                found = None
            if isinstance(found, type) and dataclasses.is_dataclass(found):
                return found
        raise pickle.UnpicklingError(f"a cached case may not hold {module}.{name}")


def draw_without_local_constants() -> None:
    """Make what Hypothesis draws depend on the strategies only.

    Hypothesis mixes into its draws the literals it finds in the source of
    the "local" modules loaded (those outside site-packages), so one property
    could draw other inputs in the student kit (installed, without the hidden
    tests) than at grading (a checkout), or after any edit of the grader.
    There is no setting for it: replace the internal collector by an empty
    pool (checked by tests/test_grader_corpus.py). Done before each draw or
    search, not at import.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a Hypothesis without the feature
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None:
        cache.cache.clear()


def hypothesis_settings(examples: int) -> settings:
    from hypothesis import HealthCheck, Phase, settings

    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )


class _Reseeding:
    """Hypothesis's own reseeding of the global generators (``hypothesis.core.deterministic_PRNG``), turned off while
    any of the grader's finds runs (without_global_reseeding), under a lock: the last find out puts it back,
    whatever the order threads leave in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.finds = 0  # finds running without it
        self.saved: Any = None  # Hypothesis's, while they run (None: Hypothesis has no such name)

    def leave_off(self) -> None:
        from hypothesis import core

        with self.lock:
            if self.finds == 0:
                self.saved = getattr(core, "deterministic_PRNG", None)
                if self.saved is not None:
                    core.deterministic_PRNG = contextlib.nullcontext  # type: ignore[assignment]
            self.finds += 1

    def put_back(self) -> None:
        from hypothesis import core

        with self.lock:
            self.finds -= 1
            if self.finds == 0 and self.saved is not None:
                core.deterministic_PRNG = self.saved


_RESEEDING = _Reseeding()


@contextlib.contextmanager
def without_global_reseeding() -> Iterator[None]:
    """Hypothesis saves, seeds and restores the global random generators (the random module's and numpy's) around
    every case it tries, so that a test drawing from them is repeatable: about 0.25 ms a case here, a tenth of a
    failing file's searches. Nothing the grader runs inside ``find`` draws from them (the submission runs in its own
    process; the strategies and the checks use generators of their own), so the cases tried and the answers are the
    same without it (tests/test_cases.py checks the cases and that the global states are left alone). Private
    internals: where the name is gone, Hypothesis does as it always did."""
    _RESEEDING.leave_off()
    try:
        yield
    finally:
        _RESEEDING.put_back()


def load_case(blob: bytes) -> object:
    """A fresh copy of a kept case (a property may change what it is given)."""
    return CaseUnpickler(io.BytesIO(blob)).load()


def case_key(case: object) -> bytes:
    """A case's identity by value (Hypothesis replays a failure as an equal, new object)."""
    try:
        return pickle.dumps(case, protocol=4)
    except Exception:  # noqa: BLE001 - a case pickle refuses: its repr is the next best identity
        return repr(case).encode()


def draw(prop: Property) -> list[bytes]:
    """The cases ``find`` gives the property's condition, in order, when no case fails."""
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    drawn: list[bytes] = []

    def holds_back(case: object) -> bool:
        drawn.append(case_key(case))
        return False

    try:
        find_with_grading_settings(prop, holds_back)
    except (NoSuchExample, Unsatisfiable):
        pass
    return drawn


def find_with_grading_settings(prop: Property, condition: Callable[[Any], bool]) -> Any:
    """Hypothesis's ``find`` as the grading runs it, for drawing and for searching alike: draws that depend on the
    strategies only (draw_without_local_constants), the grading's settings, no reseeding of the global generators."""
    from hypothesis import find

    draw_without_local_constants()
    with without_global_reseeding():
        return find(prop.strategy, condition, settings=hypothesis_settings(prop.examples))


class CaseBook:
    """The drawn cases of some properties, by property id (pickled; :func:`load_case` gives each)."""

    def __init__(self, cases: dict[str, list[bytes]]) -> None:
        self._cases = cases

    def cases(self, prop: Property) -> Iterator[object] | None:
        """Fresh copies of the property's cases, in the order ``find`` draws them; None if none were drawn."""
        kept = self.replay(prop)
        return None if kept is None else (case for _, case in kept)

    def replay(self, prop: Property) -> Iterator[tuple[bytes, object]] | None:
        """(key, fresh copy) of the property's cases, in the order ``find`` draws them (the key is the case as
        kept: what case_key gives it); None if none were drawn."""
        blobs = self._cases.get(prop.id)
        return None if blobs is None else ((blob, load_case(blob)) for blob in blobs)

    @classmethod
    def drawn(cls, properties: Iterable[Property], *, on_disk: bool) -> CaseBook:
        """The cases of ``properties``: read from the cache, the missing ones drawn (and kept, if ``on_disk``).

        A cache folder that another user may write is refused (CacheError); one that cannot be made is done
        without.
        """
        wanted = list(properties)
        path = cache_file() if on_disk else None
        kept = _read(path) if path is not None else {}
        missing = [p for p in wanted if p.id not in kept]
        # Properties searched alike (Property.search_key) are given the same cases: drawn once for them all.
        alike = {p.search_key: kept[p.id] for p in wanted if p.id in kept}
        for prop in missing:
            if prop.search_key not in alike:
                alike[prop.search_key] = draw(prop)
            kept[prop.id] = alike[prop.search_key]
        if missing and path is not None:
            write_kept(path, kept)
        return cls({p.id: kept[p.id] for p in wanted})


def cache_file() -> Path | None:
    """This grader version's file of cases in the private cache folder; None if the folder cannot be made."""
    where = case_cache_folder()
    if where is None:
        return None  # no home: draw in memory
    try:
        folder = private_folder(where, "case cache")
    except OSError:
        return None  # no writable home (a container): draw in memory
    return folder / f"cases-{version_key()}.pickle"


def loads(blob: bytes) -> bool:
    """Whether a kept case loads (a forged one is refused when its file is read, once, not in the middle of a
    grading)."""
    try:
        load_case(blob)
    except Exception:  # noqa: BLE001 - whatever a forged case raises
        return False
    return True


def read_kept(path: Path) -> object:
    """What a file of kept cases holds (through the allow-listed unpickler), or None if it is absent or damaged."""
    try:
        with open(path, "rb") as stream:
            return CaseUnpickler(stream).load()
    except Exception:  # noqa: BLE001 - whatever a damaged or forged file raises (MemoryError for a huge length)
        return None


def write_kept(path: Path, kept: object) -> None:
    """Write a file of kept cases whole (never a half-written file, whoever reads or writes it meanwhile)."""
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.stem}-", delete=False) as stream:
            pickle.dump(kept, stream, protocol=4)
        os.replace(stream.name, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(stream.name)  # a full disk: what was to be kept is drawn or searched again next time


def _read(path: Path) -> dict[str, list[bytes]]:
    """The kept cases, or nothing if the file is absent or not a book of cases that load."""
    book = read_kept(path)
    if not (isinstance(book, dict) and all(isinstance(k, str) and isinstance(v, list)
                                           and all(isinstance(b, bytes) for b in v) for k, v in book.items())):
        return {}
    if not all(loads(blob) for blobs in book.values() for blob in blobs):
        return {}
    return book

