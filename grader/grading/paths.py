"""The searches of failing properties, kept: the next file that fails the same way is searched without Hypothesis.

With derandomized settings and no example database, ``find`` is a pure function of what its condition answers:
which case it tries next depends only on whether the cases before failed. So one property's searches form a tree:
a node is a case ``find`` gave the condition, with an edge for "it held" and one for "it failed", each leading to
the next case ``find`` gave, or to the end of the search. A search that walks a path already in the tree calls the
submission on the same cases, in the same order, and ends where ``find`` would: same counts, same smallest case,
same report, without drawing or shrinking (most of a failing file's grading: Hypothesis's own work, two thirds of it
on candidates that never reach the condition). Where the walk leaves the tree, ``find`` runs as before (the cases
already tried are asked again and answered from the walk, without calling the child) and its path is added.

Paths are only added when nothing but the answers can have steered the search: ``find`` ended normally or by the
search's own stop (grader.grading.search._Abort) within a minute, every case kept loads back, and the smallest case
``find`` gave is the last one that failed (the walk reports that one). A walk that leaves the tree hands its calls
to ``find`` in order (Search.rewind): the child is called as ``find`` alone would call it, even by a file that
keeps state between calls.

Properties searched alike (Property.search_key: cases built by the same function, the same counts) share one
tree: ``find`` is the same function of the answers for them all, so the first failing property's search is walked
by the others that fail on the same cases (a wrong contact_solve_grains fails momentum, energy and swapping alike:
one search instead of three, in a file's first grading too).

The trees are kept beside the drawn cases (same private folder, same version key, same allow-listed unpickler),
only under strong isolation (where the submission cannot write them), one file per search key of at most MAX_NODES
nodes, written under a lock; elsewhere in memory, for the one grading. A forged file cannot run code, nor make a
walk loop (a node's edges lead only to later nodes), nor end a search with no failure (a kept search always passes
the replayed case that failed, so such an end is refused and ``find`` searches); a case the property cannot check
deletes the tree, and ``find`` searches afresh. It can change which cases are tried, as a forged book of cases can.
A file whose answers change from run to run adds a path per grading and can fill a tree: the walks of later files
then stop where it is full, which costs time, never a grade.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading.cases import cache_file, load_case, loads, read_kept, write_kept
from grader.properties.property import Property

#: An edge to no case yet (the search was never seen to go on there), or to the end of the search.
UNKNOWN, END = -1, -2
#: Nodes kept per property (about 10-60 per failing search, so tens of distinct failures): past it, no path is added.
MAX_NODES = 2000


@dataclass
class Node:
    """A case ``find`` gave the condition (pickled, as case_key gives it), and where the search went on after it."""

    case: bytes
    held: int = UNKNOWN
    failed: int = UNKNOWN

    def after(self, failed: bool) -> int:
        return self.failed if failed else self.held


@dataclass
class Call:
    """One call of the condition during a search: the case (its key) and its answer (None: the search stopped in
    the call, grader.grading.search._Abort)."""

    case: bytes
    failed: bool | None


@dataclass
class SearchTree:
    """The kept searches of one property; node 0 is the first case."""

    nodes: list[Node] = field(default_factory=list)

    def walk(self, condition: Callable[[object, bytes], bool]) -> bool:
        """Call ``condition(case, key)`` along the tree, as ``find`` would: True if the walk reached the end of a
        kept search, False if it left the tree (then ``find`` must go on). Whatever ``condition`` raises passes (the
        cases were loaded once when the tree was read)."""
        k = 0 if self.nodes else UNKNOWN
        while k >= 0:
            node = self.nodes[k]
            k = node.after(condition(load_case(node.case), node.case))
        return k == END

    def add(self, calls: list[Call], ended: bool) -> bool:
        """Add one search's calls (``ended``: ``find`` returned or found nothing after the last one); whether the
        tree changed. A search that disagrees with the tree (a forged file, or a case whose key is not stable)
        adds nothing from there on."""
        if not calls:
            return False
        changed, k = False, 0
        if not self.nodes:
            self.nodes.append(Node(calls[0].case))
            changed = True
        for i, call in enumerate(calls):
            node = self.nodes[k]
            if node.case != call.case or call.failed is None:
                return changed
            if i + 1 == len(calls):
                if ended and node.after(call.failed) == UNKNOWN:
                    self._link(node, call.failed, END)
                    changed = True
                return changed
            nxt = node.after(call.failed)
            if nxt == END:
                return changed
            if nxt == UNKNOWN:
                if len(self.nodes) >= MAX_NODES:
                    return changed
                nxt = len(self.nodes)
                self.nodes.append(Node(calls[i + 1].case))
                self._link(node, call.failed, nxt)
                changed = True
            k = nxt
        return changed

    @staticmethod
    def _link(node: Node, failed: bool, to: int) -> None:
        if failed:
            node.failed = to
        else:
            node.held = to

    def rows(self) -> list[tuple[bytes, int, int]]:
        return [(n.case, n.held, n.failed) for n in self.nodes]

    @classmethod
    def from_rows(cls, rows: object) -> SearchTree:
        """The tree of kept rows; an empty one if they are not a well-formed tree (edges only to later nodes)."""
        if not isinstance(rows, list) or len(rows) > MAX_NODES:
            return cls()
        nodes = []
        for k, row in enumerate(rows):
            if not (isinstance(row, tuple) and len(row) == 3 and isinstance(row[0], bytes)
                    and all(type(e) is int and (e in (UNKNOWN, END) or k < e < len(rows)) for e in row[1:])):
                return cls()
            nodes.append(Node(row[0], row[1], row[2]))
        return cls(nodes)


class SearchPaths:
    """The kept search trees of this grader version, read per search key and written back as searches are added;
    with no file of drawn cases, in memory only."""

    def __init__(self, book: Path | None) -> None:
        """book: this grader version's file of drawn cases (cases.cache_file), beside which the trees lie; None:
        the trees live in memory, shared by the properties searched alike in one grading."""
        self.book = book
        self._trees: dict[str, SearchTree] = {}

    @classmethod
    def kept(cls, on_disk: bool) -> SearchPaths:
        """The trees beside the drawn cases when ``on_disk`` and the cache folder can be had, else in memory."""
        return cls(cache_file() if on_disk else None)

    def _file(self, prop: Property) -> Path | None:
        if self.book is None:
            return None
        tag = hashlib.sha256(prop.search_key.encode()).hexdigest()[:16]
        return self.book.with_name(f"{self.book.stem.replace('cases-', 'paths-', 1)}-{tag}.pickle")

    def tree(self, prop: Property) -> SearchTree:
        key = prop.search_key
        if key not in self._trees:
            path = self._file(prop)
            self._trees[key] = SearchTree() if path is None else _read(path)
        return self._trees[key]

    def forget(self, prop: Property) -> None:
        """Delete the property's tree: one of its cases could not be checked (a forged file)."""
        self._trees[prop.search_key] = SearchTree()
        path = self._file(prop)
        if path is not None:
            with _locked(path), contextlib.suppress(OSError):
                path.unlink()

    def add(self, prop: Property, calls: list[Call], ended: bool) -> None:
        """Add a search to the property's tree and its file, merged under a lock with what other processes (a
        batch's workers) wrote since."""
        if not all(loads(call.case) for call in calls):
            return  # a case kept by its repr (it did not pickle) could not be given again
        path = self._file(prop)
        if path is None:
            self.tree(prop).add(calls, ended)
            return
        with _locked(path):
            tree = _read(path)
            if tree.add(calls, ended):
                write_kept(path, tree.rows())
        self._trees[prop.search_key] = tree


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The property's lock file held (without one, two workers adding at once would keep one path of the two)."""
    try:
        lock = open(path.with_suffix(".lock"), "a")
    except OSError:
        yield  # no lock to be had (a read-only folder): the write fails the same way
        return
    with lock:
        with contextlib.suppress(OSError):  # a file system without locks (NFS with no lock daemon): go on without
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read(path: Path) -> SearchTree:
    """The kept tree, or an empty one if the file is absent or is not a tree of cases that load."""
    tree = SearchTree.from_rows(read_kept(path))
    if not all(loads(node.case) for node in tree.nodes):
        return SearchTree()  # refused here, once, not in the middle of a walk
    return tree
