"""The allow-list file tree a submission sees in its box, and what must never be readable.

Inside the box exist only: the interpreter's prefix (read-only, at ``/python`` unless it is under /usr),
the system folders the dynamic loader needs (/usr, and /bin, /lib... as the host has them), /etc/ld.so.cache,
numpy, matplotlib and their dependencies (each top-level package folder bound read-only into ``/site``),
/dev, /proc and the box itself. Every site-packages or dist-packages folder under those system folders is
covered with an empty, read-only tmpfs: the grader or the reference may be installed there. So is every
secret that falls under a bound folder.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.metadata as metadata
import importlib.util
import re
import signal
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader.spec import paths

#: Top-level packages the submission may import, with everything they require.
PACKAGES = ("numpy", "matplotlib")
SITE_INSIDE = "/site"
PYTHON_INSIDE = "/python"
_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_PACKAGE_FOLDERS = ("site-packages", "dist-packages")

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38


def die_with_parent() -> None:
    """In a forked child: SIGKILL when the parent (thread) dies."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def no_new_privs() -> None:
    """In a forked child: no exec can ever grant privileges again (setuid binaries, file capabilities)."""
    if _LIBC is not None and _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


@dataclass(frozen=True)
class BoxTree:
    """What the child sees: read-only binds (host, inside), symlinks (target, inside), covered paths."""

    binds: tuple[tuple[str, str], ...]
    symlinks: tuple[tuple[str, str], ...]
    covers: tuple[str, ...]  # inside paths hidden under an empty read-only tmpfs (folders) or /dev/null (files)
    python: str  # the interpreter, as the child sees it
    site: tuple[str, ...]  # sys.path folders of the packages, as the child sees them
    path_var: str
    library_path: str  # LD_LIBRARY_PATH inside ('' if not needed)

    def mount_args(self) -> list[str]:
        """bubblewrap arguments building this tree (before the box's own folder)."""
        # Folders bubblewrap would create for the binds are 0700 when it runs as root: make them searchable.
        parents = {str(p) for _, inside in self.binds for p in Path(inside).parents if str(p) != "/"}
        args = [a for d in sorted(parents | {SITE_INSIDE, "/box"}) for a in ("--perms", "0755", "--dir", d)]
        for target, inside in self.symlinks:
            args += ["--symlink", target, inside]
        for host, inside in self.binds:
            args += ["--ro-bind", host, inside]
        for inside in self.covers:
            if inside.endswith("/"):
                args += ["--tmpfs", inside.rstrip("/"), "--remount-ro", inside.rstrip("/")]
            else:
                args += ["--ro-bind", "/dev/null", inside]
        return args + ["--proc", "/proc", "--dev", "/dev"]


def host_prefix() -> Path:
    """The base interpreter's prefix (not a venv's: the child needs no venv)."""
    return Path(sys.base_prefix).resolve()


def host_python() -> str:
    exe = host_prefix() / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(exe.resolve() if exe.exists() else Path(sys.executable).resolve())


def _distribution_tops(name: str, seen: set[str]) -> Iterable[Path]:
    """The top-level files and folders of distribution ``name`` and of all it requires (not extras)."""
    try:
        dist = metadata.distribution(name) if name else None
    except metadata.PackageNotFoundError:
        dist = None
    if dist is None:
        return
    key = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    if key in seen:
        return
    seen.add(key)
    tops = {f.parts[0] for f in dist.files or () if not f.parts[0].startswith("..")
            and not f.parts[0].endswith((".dist-info", ".egg-info", ".pth")) and f.parts[0] != "__pycache__"}
    for top in sorted(tops):
        yield Path(str(dist.locate_file(top))).resolve()
    for requirement in dist.requires or ():
        yield from _distribution_tops(_required(requirement), seen)


def _required(requirement: str) -> str:
    """The name a requirement needs, or '' when its marker excludes it here (extras are not installed)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - packaging comes with matplotlib
        return "" if ";" in requirement else re.split(r"[\s<>=!~\[;(]", requirement, maxsplit=1)[0]
    parsed = Requirement(requirement)
    return "" if parsed.marker is not None and not parsed.marker.evaluate({"extra": ""}) else parsed.name


@functools.cache
def package_tops() -> tuple[Path, ...]:
    seen: set[str] = set()
    return tuple(dict.fromkeys(p for name in PACKAGES for p in _distribution_tops(name, seen) if p.exists()))


def packages_under(folder: Path) -> tuple[Path, ...]:
    """The bound package folders that lie inside ``folder`` (a virtual environment in the grader's checkout): a bind
    mount shows its source's path in the box's /proc/self/mountinfo."""
    folder = folder.resolve()
    return tuple(p for p in package_tops() if p == folder or folder in p.parents)


def host_site() -> tuple[str, ...]:
    """The folders holding the packages on the host (for a child without namespaces)."""
    return tuple(dict.fromkeys(str(p.parent) for p in package_tops()))


@functools.cache
def secrets() -> tuple[Path, ...]:
    """What a submission must never read: the grader (its hidden tests), the reference, the checkout, the cache of
    drawn test inputs."""
    found = [paths.PACKAGE_DIR]
    for name in ("reference", "grader"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            found += [Path(d).resolve() for d in spec.submodule_search_locations]
    checkout = paths.PACKAGE_ROOT
    if (checkout / ".git").exists():
        found.append(checkout)
    cases = paths.case_cache_folder()
    if cases is not None and cases.exists():  # the hidden tests' inputs, drawn and kept
        found.append(cases.resolve())
    return tuple(dict.fromkeys(found))


def _inside(host: Path, binds: Iterable[tuple[str, str]]) -> list[str]:
    """Where ``host`` appears inside the box (through each bind that contains it)."""
    return [str(Path(inside) / host.relative_to(source)) for source, inside in binds
            if host.is_relative_to(source)]


@functools.lru_cache(maxsize=64)
def box_tree(hide: tuple[Path, ...] = ()) -> BoxTree:
    """The allow-list tree; ``hide``: more paths that must not be visible (covered if under a bound folder)."""
    root = Path("/")
    symlinks = tuple((str((root / d).readlink()), f"/{d}") for d in _SYSTEM if (root / d).is_symlink())
    # Of /usr only what programs and the loader need: not /usr/local, /usr/src, /usr/share (a copy of the
    # grader or the reference could sit there).
    binds = [(f"/usr/{d}", f"/usr/{d}") for d in _SYSTEM[1:] if Path("/usr", d).is_dir()
             and not Path("/usr", d).is_symlink()]
    binds += [(f"/{d}", f"/{d}") for d in _SYSTEM if (root / d).is_dir() and not (root / d).is_symlink()
              and d != "usr"]
    # The loader's cache, and fontconfig's settings (else every plot prints a fontconfig error).
    binds += [(p, p) for p in ("/etc/ld.so.cache", "/etc/fonts") if Path(p).exists()]
    prefix, python, library_path = host_prefix(), host_python(), ""
    under_system = _inside(Path(python), binds)
    if under_system:
        python = under_system[0]
    else:
        binds.append((str(prefix), PYTHON_INSIDE))
        python = _inside(Path(python), [(str(prefix), PYTHON_INSIDE)])[0]
        library_path = f"{PYTHON_INSIDE}/lib"  # its RUNPATH names the host's prefix, absent inside
    system_binds = list(binds)
    folders = [p for source, _ in system_binds if Path(source).is_dir()
               for pattern in ("python3*/*-packages", "lib/python3*/*-packages")
               for p in Path(source).glob(pattern) if p.name in _PACKAGE_FOLDERS]
    covers = [inside + "/" for f in folders for inside in _inside(f.resolve(), system_binds)]
    for p in [*secrets(), *hide]:
        p = p.resolve()
        if p.exists():
            covers += [inside + ("/" if p.is_dir() else "") for inside in _inside(p, system_binds)]
    binds += [(str(top), f"{SITE_INSIDE}/{top.name}") for top in package_tops()]
    path_var = ":".join(dict.fromkeys([str(Path(python).parent), "/usr/bin", "/bin"]))
    return BoxTree(tuple(binds), symlinks, tuple(dict.fromkeys(covers)), python, (SITE_INSIDE,), path_var,
                   library_path)
