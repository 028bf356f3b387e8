"""The parts every chart of ``flows/report/charts.py`` is made of: ticks and number formats, the
frame, legend and axes, and thinning.

Every chart says what question it answers (a visible title), what its axes measure (labels with
units), what a mark is (a legend), and says so in words when there is nothing to draw (a constant
dimension, no data) instead of drawing a degenerate axis. Hovering a mark shows its ``<title>``.
Large runs are drawn as counts (histograms) or thinned, so a 10,000-case page stays light.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from markupsafe import Markup, escape

PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2"]
W, H, PAD = 640, 220, 40
CHAR_W = 6.6  # average width of a 12-unit legend character, for laying legends out in rows
MAX_DOTS = 300  # per variant: more cases are drawn as a histogram strip
MAX_BARS = 150  # per comparison: more cases are drawn as a histogram of differences
MAX_POINTS = 500  # per variant in a scatter: more are thinned (every k-th case)

Fmt = Callable[[float], str]
T = TypeVar("T")


def scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    return a if hi == lo else a + (v - lo) / (hi - lo) * (b - a)


def frame(body: str, title: str, height: int = H) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {W} {height}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{body}</svg>'
    )


# ---------------------------------------------------------------- ticks and numbers


def nice_step(span: float, count: int = 5) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving about ``count`` intervals."""
    raw = span / max(count, 1)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude * (1 + 1e-9))


def ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    step = nice_step(hi - lo, count)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 10) for k in range(first, math.floor(hi / step + 1e-9) + 1)]


def nice_range(lo: float, hi: float, count: int = 5) -> tuple[float, float]:
    """[lo, hi] widened to whole tick steps."""
    step = nice_step(hi - lo, count)
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step


def number(step: float) -> Fmt:
    """A formatter showing as many decimals as the tick step needs."""
    decimals = 0
    while decimals < 8 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-6:
        decimals += 1
    return lambda v: f"{v:,.{decimals}f}"


def signed_number(step: float) -> Fmt:
    plain = number(step)
    return lambda v: ("+" if v > 0 else "") + plain(v)


# ---------------------------------------------------------------- frame, legend, axes


@dataclass(frozen=True)
class Box:
    """The plot area in chart units, with the data ranges of its two axes."""

    left: float
    top: float
    right: float
    bottom: float
    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float

    def x(self, v: float) -> float:
        return scale(v, self.x_lo, self.x_hi, self.left, self.right)

    def y(self, v: float) -> float:
        return scale(v, self.y_lo, self.y_hi, self.bottom, self.top)


@dataclass(frozen=True)
class Key:
    """One legend entry: a swatch (dot, bar, line, dash, band, up, down, diamond) and its words."""

    shape: str
    color: str
    text: str


def _swatch(k: Key, x: float, y: float) -> str:
    c = k.color
    shapes = {
        "dot": f'<circle cx="{x + 6}" cy="{y}" r="4" fill="{c}" fill-opacity="0.6"/>',
        "bar": f'<rect x="{x}" y="{y - 5}" width="12" height="10" fill="{c}"/>',
        "line": f'<line x1="{x}" y1="{y}" x2="{x + 14}" y2="{y}" stroke="{c}" stroke-width="3"/>',
        "dash": f'<line x1="{x}" y1="{y}" x2="{x + 14}" y2="{y}" stroke="{c}" stroke-width="2" '
        'stroke-dasharray="4 3"/>',
        "band": f'<rect x="{x}" y="{y - 6}" width="14" height="12" fill="{c}" fill-opacity="0.35"/>',
        "up": f'<path d="M{x + 6} {y - 6} L{x + 12} {y + 5} L{x} {y + 5} Z" fill="{c}"/>',
        "down": f'<path d="M{x} {y - 5} L{x + 12} {y - 5} L{x + 6} {y + 6} Z" fill="{c}"/>',
        "diamond": f'<path d="M{x + 6} {y - 6} L{x + 12} {y} L{x + 6} {y + 6} L{x} {y} Z" fill="{c}" '
        'stroke="#111827"/>',
    }
    return shapes.get(k.shape, shapes["dot"])


def legend(keys: Sequence[Key], top: float) -> tuple[str, float]:
    """The legend in rows under the title, and the y where the plot may start."""
    parts, x, y = ['<g class="legend">'], 12.0, top + 8
    for k in keys:
        width = 22 + CHAR_W * len(k.text)
        if x > 12 and x + width > W - 8:
            x, y = 12.0, y + 18
        parts.append(f'{_swatch(k, x, y)}<text x="{x + 18:.1f}" y="{y + 4}">{escape(k.text)}</text>')
        x += width + 14
    parts.append("</g>")
    return ("".join(parts), y + 16) if keys else ("", top)


def chart(title: str, body: str, height: float, *, subtitle: str = "", kind: str = "") -> Markup:
    """The SVG around a chart: the visible title (the question), a subtitle, the accessible name."""
    head = f'<text x="12" y="22" class="chart-title">{escape(title)}</text>'
    if subtitle:
        head += f'<text x="12" y="40" class="chart-sub">{escape(subtitle)}</text>'
    name = f"{title}. {subtitle}" if subtitle else title
    return Markup(
        f'<svg class="chart{" " + kind if kind else ""}" viewBox="0 0 {W} {height:.0f}" role="img" '
        f'aria-label="{escape(name)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(name)}</title>'
        f"{head}{body}</svg>"
    )


def note(title: str, message: str) -> Markup:
    """A chart with nothing worth drawing: its title, and why, in words."""
    lines, line = [], ""
    for word in message.split():
        if line and len(line) + len(word) > 84:
            lines.append(line)
            line = ""
        line = f"{line} {word}".strip()
    lines.append(line)
    body = "".join(
        f'<text x="{W / 2}" y="{62 + 18 * i}" class="chart-note" text-anchor="middle">{escape(t)}</text>'
        for i, t in enumerate(lines)
    )
    return chart(title, body, 80 + 18 * len(lines), kind="chart-empty")


def head_height(subtitle: str) -> float:
    return 48.0 if subtitle else 30.0


def x_axis(box: Box, values: Sequence[float], fmt: Fmt, label: str, *, labels: Sequence[str] = ()) -> str:
    """Bottom axis: grid line and tick label per value, the axis label centred below."""
    parts = [f'<line x1="{box.left}" y1="{box.bottom}" x2="{box.right}" y2="{box.bottom}" class="axis"/>']
    for i, v in enumerate(values):
        x = box.x(v)
        text = labels[i] if labels else fmt(v)
        half = len(text) * CHAR_W / 2  # a label at either end is moved inward, never cut off
        at = min(max(x, half + 2), W - half - 2)
        parts.append(
            f'<line x1="{x:.1f}" y1="{box.top}" x2="{x:.1f}" y2="{box.bottom}" class="grid"/>'
            f'<line x1="{x:.1f}" y1="{box.bottom}" x2="{x:.1f}" y2="{box.bottom + 4}" class="axis"/>'
            f'<text x="{at:.1f}" y="{box.bottom + 17}" class="tick" text-anchor="middle">{escape(text)}</text>'
        )
    parts.append(
        f'<text x="{(box.left + box.right) / 2:.1f}" y="{box.bottom + 36}" class="axis-label x-label">'
        f"{escape(label)}</text>"
    )
    return "".join(parts)


def y_axis(box: Box, values: Sequence[float], fmt: Fmt, label: str) -> str:
    """Left axis: grid line and tick label per value, the axis label turned along it."""
    parts = [f'<line x1="{box.left}" y1="{box.top}" x2="{box.left}" y2="{box.bottom}" class="axis"/>']
    for v in values:
        y = box.y(v)
        parts.append(
            f'<line x1="{box.left}" y1="{y:.1f}" x2="{box.right}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{box.left - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{escape(fmt(v))}</text>'
        )
    middle = (box.top + box.bottom) / 2
    parts.append(
        f'<text x="14" y="{middle:.1f}" class="axis-label y-label" transform="rotate(-90 14 {middle:.1f})">'
        f"{escape(label)}</text>"
    )
    return "".join(parts)


def thin(items: Sequence[T], limit: int) -> tuple[Sequence[T], int]:
    """Every k-th item so that at most ``limit`` remain, and k."""
    step = max(1, math.ceil(len(items) / limit))
    return items[::step], step
