"""The efficiency measure as people read it: one terminal line, a log-log plot, the class's exponents.

Plots are hand-written inline SVG (no matplotlib: a few lines and dots), so a
feedback page stays one self-contained file.
"""

from __future__ import annotations

import math
from html import escape

from grader.grading.results import Efficiency

WIDTH, HEIGHT, MARGIN = 420, 260, 48
STUDENT, REFERENCE = "#a11", "#3b6ea8"


def line(efficiency: Efficiency) -> str:
    """One line for ``check``: the exponent, the reference's, right or wrong at the largest N, the bonus."""
    if efficiency.exponent is None:
        return f"efficiency: {efficiency.note or 'not measured'}"
    from grader.grading.efficiency import FIT_SIZES  # the measuring module (numpy, the sandbox): only when needed

    fitted = efficiency.sizes[-FIT_SIZES:]
    parts = [f"efficiency: cost per event ~ N^{efficiency.exponent:.2f} for N = {fitted[0]} to "
             f"{fitted[-1]}" + (f" (reference ~ N^{efficiency.reference_exponent:.2f})"
                                if efficiency.reference_exponent is not None else ""),
             "right at the largest N" if efficiency.right_at_largest else "WRONG answers at the largest N"]
    if efficiency.event_seconds and efficiency.reference_seconds and efficiency.reference_seconds[-1] > 0:
        ratio = efficiency.event_seconds[-1] / efficiency.reference_seconds[-1]
        parts.append(f"at N = {efficiency.sizes[-1]}: {ratio:.0f} times the reference's cost per event")
    if efficiency.bonus_max:
        parts.append(f"bonus {efficiency.bonus:g} / {efficiency.bonus_max:g}")
    if efficiency.note:
        parts.append(efficiency.note)
    return "; ".join(parts)


def _scale(values: list[float]) -> tuple[float, float]:
    """(low, high) of the logs of ``values``, never empty."""
    logs = [math.log10(v) for v in values if v > 0]
    if not logs:
        return 0.0, 1.0
    a, b = math.floor(min(logs)), math.ceil(max(logs))
    return (a, b) if b > a else (a, a + 1)


def plot_svg(efficiency: Efficiency) -> str:
    """Log-log plot: CPU seconds per event against N, the submission's and the reference's."""
    series = [(efficiency.event_seconds, STUDENT, "your update (CPU in the sandbox)"),
              (efficiency.reference_seconds, REFERENCE, "reference (this grader's machine)")]
    sizes = list(efficiency.sizes)
    if not sizes:
        return ""
    nx = _scale([float(n) for n in sizes])
    ny = _scale([s for values, _, _ in series for s in values])
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def at(n: float, s: float) -> tuple[float, float]:
        px = MARGIN + (math.log10(n) - nx[0]) / (nx[1] - nx[0]) * plot_w
        py = HEIGHT - MARGIN - (math.log10(max(s, 1e-12)) - ny[0]) / (ny[1] - ny[0]) * plot_h
        return round(px, 1), round(py, 1)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
             f'aria-label="CPU seconds per event against N, log-log" font-family="sans-serif" font-size="11">',
             f'<rect x="{MARGIN}" y="{MARGIN}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>']
    for k in range(int(ny[0]), int(ny[1]) + 1):
        _, y = at(10 ** nx[0], 10.0 ** k)
        parts.append(f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{y}" y2="{y}" stroke="#eee"/>'
                     f'<text x="{MARGIN - 4}" y="{y + 4}" text-anchor="end">1e{k}</text>')
    for n in sizes:
        x, _ = at(n, 10.0 ** ny[0])
        parts.append(f'<text x="{x}" y="{HEIGHT - MARGIN + 14}" text-anchor="middle">{n}</text>')
    parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" text-anchor="middle">N (grains)</text>'
                 f'<text x="12" y="{HEIGHT / 2}" text-anchor="middle" transform="rotate(-90 12 {HEIGHT / 2})">'
                 'CPU seconds per event</text>')
    for row, (values, colour, label) in enumerate(series):
        points = [at(n, s) for n, s in zip(sizes, values)]
        if points:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                         + " ".join(f"{x},{y}" for x, y in points) + '"/>')
            parts += [f'<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>' for x, y in points]
        parts.append(f'<text x="{MARGIN + 8}" y="{MARGIN - 22 + 13 * row}" fill="{colour}">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def section(efficiency: Efficiency) -> str:
    """The feedback page's "Efficiency" section: the plot, the exponents and what they mean."""
    text = [f"<p>{escape(line(efficiency))}.</p>"]
    if efficiency.exponent is not None:
        text.append(plot_svg(efficiency))
        text.append("<p class=\"small\">Cost per event: the CPU time of one <code>update</code> divided by the "
                    "contacts it solves, on random gases of N grains (the same for everyone). A slope of 2 is the "
                    "search over all pairs; below 1.5 needs a smarter search (cells, an event table). The "
                    "reference's curve was measured on the grader's machine, outside the sandbox.</p>")
    return "<h2>Efficiency</h2>" + "".join(text)


def histogram_svg(exponents: list[float]) -> str:
    """The class's exponents as a small histogram (bins of 0.25 from 0 to 3)."""
    if not exponents:
        return "<p>No exponent measured (run batch with --efficiency).</p>"
    bins = [0] * 12
    for e in exponents:
        bins[min(11, max(0, int(e / 0.25)))] += 1
    top = max(bins)
    bar_w, plot_h = (WIDTH - 2 * MARGIN) / 12, HEIGHT - 2 * MARGIN
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
             'aria-label="exponents of the class" font-family="sans-serif" font-size="11">']
    for k, count in enumerate(bins):
        h = plot_h * count / top
        x = MARGIN + k * bar_w
        parts.append(f'<rect x="{x:.1f}" y="{HEIGHT - MARGIN - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                     f'fill="{REFERENCE}"><title>{k * 0.25:.2f}-{(k + 1) * 0.25:.2f}: {count}</title></rect>')
        if count:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{HEIGHT - MARGIN - h - 3:.1f}" '
                         f'text-anchor="middle">{count}</text>')
        if k % 2 == 0:
            parts.append(f'<text x="{x:.1f}" y="{HEIGHT - MARGIN + 14}" text-anchor="middle">{k * 0.25:g}</text>')
    parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle">exponent of the cost per event '
                 '(2: all pairs)</text></svg>')
    return "".join(parts)
