"""What every benchmark figure shares: the output formats, the style, saving.

Used by reference/c12_plots.py and reference/dem_plots.py. matplotlib is
imported only when a figure is made, so the benchmark solutions run without it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

#: The figure formats ``--format`` accepts; png is raster, svg and pdf are vector.
FORMATS = ("png", "svg", "pdf")
#: Resolution of png files (a 7-inch-wide figure is 1050 px).
PNG_DPI = 150
STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.formatter.useoffset": False,  # never "1e-11 + 13.58..." on an axis
    "svg.fonttype": "none",  # svg text stays text: searchable, and testable
}


def check_format(fmt: str, error: type[Exception]) -> str:
    """``fmt`` in lower case if it is one of FORMATS; otherwise ``error`` naming the choices."""
    clean = str(fmt).strip().lower().lstrip(".")
    if clean not in FORMATS:
        raise error(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return clean


def plotting(folder: str | None, fmt: str, module: str, error: type[Exception]) -> ModuleType | None:
    """The plotting module ``reference.<module>`` if figures were asked for (``folder``), after checking --format
    (before any work); ``error`` naming what to fix: a format without --plots, an unknown format, no matplotlib."""
    if folder is None:
        if fmt != "png":
            raise error(f"--format {fmt} goes with --plots DIR")
        return None
    try:
        plots = importlib.import_module(f"reference.{module}")
    except ImportError as exc:
        raise error(f"--plots cannot load the plotting code ({exc}); it needs matplotlib: "
                    "pip install matplotlib") from None
    check_format(fmt, error)
    return plots


def prepare_folder(folder: Path, error: type[Exception]) -> Path:
    """Create ``folder`` (and its parents); ``error`` naming it if that is impossible."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"--plots {folder}: cannot create this folder ({exc.strerror or exc}); "
                    "give a folder path that is not a file and that you may write to") from None
    return folder


def style() -> Any:
    """A context in which figures are made and saved with the shared style."""
    import matplotlib

    # Figures are made without pyplot, so no backend is chosen and no window opens.
    return matplotlib.rc_context(STYLE)  # type: ignore[arg-type]  # keys checked by matplotlib at run time


def new_figure(width: float, height: float, rows: int = 1, columns: int = 1, **kwargs: Any):
    """A matplotlib Figure (no pyplot, no display) and its axes; call inside ``style()``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(rows, columns, **kwargs)


def save(fig: Any, folder: Path, stem: str, fmt: str, error: type[Exception]) -> Path:
    """Write ``fig`` as ``folder/stem.fmt``; ``error`` naming the file if it cannot be written."""
    path = Path(folder) / f"{stem}.{fmt}"
    try:
        fig.savefig(path, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt))
    except OSError as exc:
        raise error(f"{path}: cannot write the figure ({exc.strerror or exc})") from None
    return path


def _metadata(fmt: str) -> dict:
    # No creation date: the same data give the same file (diffable, cacheable).
    return {"png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[fmt]
