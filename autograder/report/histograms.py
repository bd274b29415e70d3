"""The cohort report's pictures: histograms laid out here, drawn as inline SVG by ``templates/histogram.html``.

A histogram is a handful of bars, ticks and labels; drawing it as SVG in the page costs
microseconds, where matplotlib took seconds to import, lay out and render PNGs, on every
``course grade``. This module only computes where everything goes (in the SVG's own units);
the template writes the markup, every label escaped, as it writes everything else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH, HEIGHT = 260, 190                      # one histogram, in the SVG's units (pixels at 100%)
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 24, 38     # the margins around the bars: ticks, labels, title


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    says: str               # its tooltip: the range and the count


@dataclass
class Histogram:
    title: str
    xlabel: str
    ylabel: str
    bars: list[Bar] = field(default_factory=list)
    xticks: list[tuple[float, str]] = field(default_factory=list)     # (x, label)
    yticks: list[tuple[float, str]] = field(default_factory=list)     # (y, label)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    bottom: float = HEIGHT - BOTTOM       # the baseline's y
    right: float = WIDTH - RIGHT          # the x axis's end


def _step(span: float, most: int) -> float:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten that cuts ``span`` in at most ``most`` steps."""
    if span <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(span / most))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if span / (m * power) <= most)


def _label(value: float) -> str:
    return f"{round(value, 6):g}"


def histogram(title: str, edges: Sequence[float], counts: Sequence[int], xlabel: str, ylabel: str,
              unit: str = "", width: int = WIDTH) -> Histogram:
    """The histogram of ``counts`` over the bins between consecutive ``edges``: whole-number
    ticks on the count axis (students and submissions come whole), round ones along the other."""
    h = Histogram(title, xlabel, ylabel, width=width, right=width - RIGHT)
    lo, hi = edges[0], edges[-1]
    span = (hi - lo) or 1.0
    tallest = max(max(counts, default=0), 1)
    ystep = max(1, math.ceil(_step(tallest, 5)))
    ytop = ystep * math.ceil(tallest / ystep)
    plot_w, plot_h = h.right - h.left, h.bottom - h.top

    def x(value: float) -> float:
        return round(h.left + (value - lo) / span * plot_w, 1)

    def y(count: float) -> float:
        return round(h.bottom - count / ytop * plot_h, 1)
    for start, end, count in zip(edges, edges[1:], counts):
        left, right = x(start), x(end)
        gap = min(1.5, (right - left) * 0.04)
        h.bars.append(Bar(left + gap, y(count), max(right - left - 2 * gap, 0.5), round(h.bottom - y(count), 1),
                          f"{_label(start)}-{_label(end)}{unit}: {count}"))
    xstep = _step(span, 5)
    first = math.ceil(lo / xstep - 1e-9)
    h.xticks = [(x(k * xstep), _label(k * xstep)) for k in range(first, math.floor(hi / xstep + 1e-9) + 1)]
    h.yticks = [(y(k), str(k)) for k in range(0, ytop + 1, ystep)]
    return h


def scores(part: str, top: float, counts: Sequence[int]) -> Histogram:
    """A part's scores (``top`` its points), one bar per equal share of its points."""
    top = top or 1
    edges = [i * top / len(counts) for i in range(len(counts) + 1)]
    return histogram(f"{part} (of {top:g})", edges, counts, "score", "students")


def seconds(values: Sequence[float], most_bins: int = 20) -> Histogram:
    """Seconds per submission, in up to ``most_bins`` equal bins from the fastest to the slowest."""
    bins = min(most_bins, max(1, len(values)))
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / (hi - lo) * bins))] += 1
    return histogram("", edges, counts, "seconds per submission", "submissions", unit=" s", width=2 * WIDTH)
