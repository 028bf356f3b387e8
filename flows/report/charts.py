"""Small server-rendered SVG charts: they work offline, need no script, and escape every label.

Every chart says what question it answers (a visible title), what its axes measure (labels with
units), what a mark is (a legend), and says so in words when there is nothing to draw (a constant
dimension, no data) instead of drawing a degenerate axis. Hovering a mark shows its ``<title>``.
Large runs are drawn as counts (histograms) or thinned, so a 10,000-case page stays light.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from flows.report.chart_kit import (
    MAX_BARS,
    MAX_DOTS,
    MAX_POINTS,
    PAD,
    PALETTE,
    Box,
    Fmt,
    Key,
    W,
    chart,
    frame,
    head_height,
    legend,
    nice_range,
    nice_step,
    note,
    number,
    scale,
    signed_number,
    thin,
    ticks,
    x_axis,
    y_axis,
)

# ---------------------------------------------------------------- score per case, per variant


def _dots(values: Sequence[float], box: Box, y: float, color: str, name: str) -> str:
    return "".join(
        f'<circle cx="{box.x(v):.1f}" cy="{y + ((j * 7) % 9 - 4) * 2.4:.1f}" r="3.2" fill="{color}" '
        f'fill-opacity="0.5"><title>{escape(name)}: {v:.2f}</title></circle>'
        for j, v in enumerate(values)
    )


def _strip(values: Sequence[float], box: Box, y: float, color: str, name: str) -> str:
    """A histogram within the variant's row: 40 bins over the scale, each centred on its value."""
    width = (box.x_hi - box.x_lo) / 40
    counts: dict[int, int] = {}
    for v in values:
        k = round((v - box.x_lo) / width)
        counts[k] = counts.get(k, 0) + 1
    top = max(counts.values())
    parts = []
    for k, n in sorted(counts.items()):
        h = max(1.0, n / top * 26)
        centre = box.x_lo + k * width
        a, b = box.x(centre - width / 2), box.x(centre + width / 2)
        parts.append(
            f'<rect x="{a:.1f}" y="{y + 13 - h:.1f}" width="{b - a - 0.6:.1f}" '
            f'height="{h:.1f}" fill="{color}" fill-opacity="0.55">'
            f"<title>{escape(name)}: {n:,} cases scored about {centre:.2f}</title></rect>"
        )
    return "".join(parts)


def _mean_and_interval(
    values: Sequence[float], interval: tuple[float | None, float | None], box: Box, y: float, name: str
) -> str:
    mean = sum(values) / len(values)
    parts = []
    low, high = interval
    if low is not None and high is not None:
        a, b = box.x(low), box.x(high)
        parts.append(
            f'<path d="M{a:.1f} {y - 5} V{y + 5} M{a:.1f} {y} H{b:.1f} M{b:.1f} {y - 5} V{y + 5}" '
            f'class="interval"><title>{escape(name)}: 95% interval {low:.2f} to {high:.2f}</title></path>'
        )
    x = box.x(mean)
    parts.append(
        f'<line x1="{x:.1f}" y1="{y - 14}" x2="{x:.1f}" y2="{y + 14}" class="mean">'
        f"<title>{escape(name)}: mean {mean:.2f} over {len(values):,} cases</title></line>"
    )
    return "".join(parts)


def distribution(
    values: Mapping[str, Sequence[float]],
    lo: float,
    hi: float,
    title: str,
    *,
    x_label: str = "score per case",
    intervals: Mapping[str, tuple[float | None, float | None]] | None = None,
) -> Markup:
    """One row per variant: every case's score (a dot, or a histogram strip for many cases), the
    mean (a bar) and its 95% interval (a whisker), on the whole scale."""
    rows = [(n, v) for n, v in values.items() if v]
    if not rows:
        return note(title, "No case has a score yet: every execution errored or was left ungraded.")
    many = max(len(v) for _, v in rows) > MAX_DOTS
    case = "cases per score (bar height)" if many else "one case (its mean over runs)"
    keys = [Key("bar" if many else "dot", "#6b7280", case), Key("line", "#111827", "variant mean")]
    if intervals:
        keys.append(Key("line", "#6b7280", "95% interval of the mean"))
    subtitle = f"{sum(len(v) for _, v in rows):,} scores; higher is better"
    legend_svg, top = legend(keys, head_height(subtitle))
    box = Box(118, top + 8, W - 20, top + 8 + 40 * len(rows), lo, hi, 0, 1)
    step = nice_step(hi - lo)
    middle = (box.top + box.bottom) / 2
    parts = [
        legend_svg,
        x_axis(box, ticks(lo, hi), number(step), x_label),
        f'<text x="14" y="{middle:.1f}" class="axis-label y-label" transform="rotate(-90 14 {middle:.1f})">'
        "variant</text>",
    ]
    for i, (name, vals) in enumerate(rows):
        y = box.top + 40 * i + 20
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<text x="26" y="{y + 4}" class="label">{escape(name[:14])}</text>')
        parts.append((_strip if many else _dots)(vals, box, y, color, name))
        parts.append(_mean_and_interval(vals, (intervals or {}).get(name, (None, None)), box, y, name))
    return chart(title, "".join(parts), box.bottom + 46, subtitle=subtitle, kind="distribution")


# ---------------------------------------------------------------- paired differences


@dataclass(frozen=True)
class Paired:
    """What the difference chart needs of a comparison."""

    treatment: str
    control: str
    margin: float
    mean: float | None = None


def _difference_keys(p: Paired, mean: float) -> list[Key]:
    return [
        Key("bar", "#059669", f"{p.treatment} scored higher"),
        Key("bar", "#dc2626", f"{p.control} scored higher"),
        Key("band", "#d97706", f"within ±{p.margin:g}: practically equal"),
        Key("dash", "#111827", f"mean difference {mean:+.2f}"),
    ]


def _cls(v: float, margin: float = 0.0) -> str:
    return "pos" if v > margin else "neg" if v < -margin else "zero"


def _difference_bars(items: Sequence[tuple[str, float]], p: Paired, top: float, mean: float) -> str:
    span = max(max(abs(v) for _, v in items), p.margin) * 1.05
    _, hi = nice_range(0, span, 4)
    box = Box(64, top + 8, W - 16, top + 208, 0, len(items), -hi, hi)
    step = nice_step(2 * hi, 8)
    parts = [
        y_axis(
            box, ticks(-hi, hi, 8), signed_number(step), f"difference in score ({p.treatment} − {p.control})"
        ),
        f'<rect x="{box.left}" y="{box.y(p.margin):.1f}" width="{box.right - box.left}" '
        f'height="{box.y(-p.margin) - box.y(p.margin):.1f}" class="margin-band"/>',
    ]
    width = max(1.0, (box.right - box.left) / len(items) - 1.5)
    for i, (label, v) in enumerate(items):
        y0, y1 = box.y(max(v, 0)), box.y(min(v, 0))
        parts.append(
            f'<rect x="{box.x(i) + 0.75:.1f}" y="{y0:.1f}" width="{width:.1f}" height="{max(y1 - y0, 1):.1f}" '
            f'class="{_cls(v)}"><title>{escape(label)}: {v:+.2f}</title></rect>'
        )
    parts += [
        f'<line x1="{box.left}" y1="{box.y(0):.1f}" x2="{box.right}" y2="{box.y(0):.1f}" class="zero-line"/>',
        f'<line x1="{box.left}" y1="{box.y(mean):.1f}" x2="{box.right}" y2="{box.y(mean):.1f}" class="mean-line"/>',
        f'<text x="{box.left + 4}" y="{box.y(0) - 4:.1f}" class="tick">0 = no difference</text>',
        f'<text x="{(box.left + box.right) / 2:.1f}" y="{box.bottom + 20}" class="axis-label x-label">'
        f"cases, sorted from {escape(p.control)}'s best to {escape(p.treatment)}'s best "
        f"({len(items):,} cases; hover for its name)</text>",
    ]
    return "".join(parts)


def _difference_histogram(values: Sequence[float], p: Paired, top: float, mean: float) -> str:
    span = max(max(abs(v) for v in values), p.margin) * 1.05
    width = nice_step(2 * span, 16)
    first, last = math.floor(-span / width - 0.5), math.ceil(span / width + 0.5)
    counts: dict[int, int] = {}
    for v in values:
        k = math.floor(v / width + 0.5)  # bins centred on multiples of the width: 0 has its own
        counts[k] = counts.get(k, 0) + 1
    _, y_hi = nice_range(0, max(counts.values()), 4)
    box = Box(64, top + 8, W - 16, top + 208, (first - 0.5) * width, (last + 0.5) * width, 0, y_hi)
    parts = [
        y_axis(box, ticks(0, y_hi, 4), number(nice_step(y_hi, 4)), "cases"),
        x_axis(
            box,
            ticks(box.x_lo, box.x_hi, 8),
            signed_number(nice_step(box.x_hi - box.x_lo, 8)),
            f"difference in score per case ({p.treatment} − {p.control})",
        ),
        f'<rect x="{box.x(-p.margin):.1f}" y="{box.top}" width="{box.x(p.margin) - box.x(-p.margin):.1f}" '
        f'height="{box.bottom - box.top}" class="margin-band"/>',
    ]
    for k, n in sorted(counts.items()):
        a, b = box.x((k - 0.5) * width), box.x((k + 0.5) * width)
        parts.append(
            f'<rect x="{a + 0.5:.1f}" y="{box.y(n):.1f}" width="{max(b - a - 1, 1):.1f}" '
            f'height="{box.bottom - box.y(n):.1f}" class="{_cls(k * width, p.margin / 2)}">'
            f"<title>{n:,} cases with a difference of {k * width:+.2f}</title></rect>"
        )
    parts += [
        f'<line x1="{box.x(0):.1f}" y1="{box.top}" x2="{box.x(0):.1f}" y2="{box.bottom}" class="zero-line"/>',
        f'<line x1="{box.x(mean):.1f}" y1="{box.top}" x2="{box.x(mean):.1f}" y2="{box.bottom}" class="mean-line"/>',
    ]
    return "".join(parts)


def differences(items: Sequence[tuple[str, float]], title: str, paired: Paired | None = None) -> Markup:
    """Per-case paired differences (treatment minus control) around a zero line, with the band of
    the practical margin and the mean: one bar per case, or a histogram when there are many."""
    p = paired or Paired("treatment", "control", 0.0)
    if not items:
        return note(title, "No case has a score in both variants: nothing to compare.")
    values = [v for _, v in items]
    if all(v == 0 for v in values):
        return note(
            title,
            f"All {len(items):,} cases scored exactly the same under {p.treatment} and "
            f"{p.control}: every difference is 0.",
        )
    mean = p.mean if p.mean is not None else sum(values) / len(values)
    better, worse = sum(v > 0 for v in values), sum(v < 0 for v in values)
    subtitle = f"{better:,} cases better, {worse:,} worse, {len(values) - better - worse:,} unchanged"
    legend_svg, top = legend(_difference_keys(p, mean), head_height(subtitle))
    if len(items) > MAX_BARS:
        body = _difference_histogram(values, p, top, mean)
    else:
        body = _difference_bars(sorted(items, key=lambda kv: kv[1]), p, top, mean)
    return chart(title, legend_svg + body, top + 260, subtitle=subtitle, kind="differences")


# ---------------------------------------------------------------- score against cost or latency


def _constant(points: Mapping[str, Sequence[tuple[float, float, str]]], what: str) -> str | None:
    """Why a scatter against ``what`` (cost or latency) would say nothing, if it would not."""
    xs = [x for pts in points.values() for x, _, _ in pts]
    if not xs:
        return f"No scored case has a recorded {what}: there is nothing to plot."
    lo, hi = min(xs), max(xs)
    if what == "cost" and hi == lo == 0:
        return (
            "Every case cost $0 (a free, local or unpriced model): there is no cost to compare scores with."
        )
    if hi == lo == 0:
        return f"No case has a measured {what}: there is nothing to compare scores with."
    if hi == lo:
        return f"Every case has the same {what} ({lo:.4g}): there is nothing to compare scores with."
    return None


def scatter(
    points: Mapping[str, Sequence[tuple[float, float, str]]],
    x_label: str,
    y_label: str,
    title: str,
    *,
    y_range: tuple[float, float],
    what: str = "cost",
    x_format: Fmt | None = None,
) -> Markup:
    """Score (y, the whole scale) against cost or latency (x, from 0), one colour per variant, each
    variant's mean as a diamond; many cases are thinned to every k-th, and the subtitle says so."""
    empty = _constant(points, what)
    if empty:
        return note(title, empty)
    xs = [x for pts in points.values() for x, _, _ in pts]
    x_lo, x_hi = nice_range(min(0.0, min(xs)), max(xs))
    keys = [Key("dot", PALETTE[i % len(PALETTE)], n) for i, n in enumerate(points)]
    keys.append(Key("diamond", "#ffffff", "variant mean"))
    shown = {n: thin(pts, MAX_POINTS) for n, pts in points.items()}
    step = max(k for _, k in shown.values())
    subtitle = "each dot: one case" + (f" (every {step}th shown of {len(xs):,})" if step > 1 else "")
    legend_svg, top = legend(keys, head_height(subtitle))
    box = Box(64, top + 8, W - 16, top + 208, x_lo, x_hi, *y_range)
    fmt = x_format or number(nice_step(x_hi - x_lo))
    parts = [
        legend_svg,
        x_axis(box, ticks(x_lo, x_hi), fmt, x_label),
        y_axis(box, ticks(*y_range), number(nice_step(y_range[1] - y_range[0])), y_label),
    ]
    for i, (name, (pts, _)) in enumerate(shown.items()):
        color = PALETTE[i % len(PALETTE)]
        parts += [
            f'<circle cx="{box.x(x):.1f}" cy="{box.y(y):.1f}" r="3.5" fill="{color}" fill-opacity="0.55">'
            f"<title>{escape(label)} · {escape(name)}: score {y:.2f} at {fmt(x)}</title></circle>"
            for x, y, label in pts
        ]
    for i, (name, pts) in enumerate(points.items()):
        if pts:
            mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
            cx, cy = box.x(mx), box.y(my)
            parts.append(
                f'<path d="M{cx:.1f} {cy - 8:.1f} L{cx + 8:.1f} {cy:.1f} L{cx:.1f} {cy + 8:.1f} L{cx - 8:.1f} {cy:.1f} Z" '
                f'fill="{PALETTE[i % len(PALETTE)]}" stroke="#111827" stroke-width="1.5">'
                f"<title>{escape(name)}: mean score {my:.2f} at mean {fmt(mx)}</title></path>"
            )
    return chart(title, "".join(parts), box.bottom + 46, subtitle=subtitle, kind="scatter")


# ---------------------------------------------------------------- a suite over its runs


@dataclass(frozen=True)
class TrendPoint:
    """One run of one series: its value (None: absent from that run), interval, and mark."""

    value: float | None
    low: float | None = None
    high: float | None = None
    mark: str = ""  # "worse" (a regression against the previous run) or "better"
    tip: str = ""


TREND_KEYS = [
    Key("down", "#dc2626", "significantly worse than the run before (regression)"),
    Key("up", "#059669", "significantly better than the run before"),
    Key("line", "#6b7280", "95% interval"),
]


def _trend_marker(x: float, y: float, p: TrendPoint, color: str, name: str) -> str:
    tip = f"<title>{escape(name)}: {escape(p.tip)}</title>"
    if p.mark == "worse":
        return (
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="11" class="regression-ring"/>'
            f'<path d="M{x - 7:.1f} {y - 6:.1f} L{x + 7:.1f} {y - 6:.1f} L{x:.1f} {y + 7:.1f} Z" '
            f'class="mark-worse">{tip}</path>'
        )
    if p.mark == "better":
        return (
            f'<path d="M{x:.1f} {y - 7:.1f} L{x + 7:.1f} {y + 6:.1f} L{x - 7:.1f} {y + 6:.1f} Z" '
            f'class="mark-better">{tip}</path>'
        )
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}">{tip}</circle>'


def _trend_series(box: Box, points: Sequence[TrendPoint], color: str, name: str) -> str:
    path, pen, parts = [], "M", []
    for i, p in enumerate(points):
        if p.value is None:
            pen = "M"  # a run without this variant breaks the line
            continue
        path.append(f"{pen}{box.x(i):.1f} {box.y(p.value):.1f}")
        pen = "L"
        if p.low is not None and p.high is not None:
            a, b, x = box.y(p.low), box.y(p.high), box.x(i)
            parts.append(
                f'<path d="M{x - 4:.1f} {a:.1f} H{x + 4:.1f} M{x:.1f} {a:.1f} V{b:.1f} M{x - 4:.1f} {b:.1f} '
                f'H{x + 4:.1f}" stroke="{color}" class="whisker"/>'
            )
    line = f'<path d="{" ".join(path)}" fill="none" stroke="{color}" stroke-width="2"/>'
    markers = [
        _trend_marker(box.x(i), box.y(p.value), p, color, name)
        for i, p in enumerate(points)
        if p.value is not None
    ]
    return "".join([*parts, line, *markers])


def trend(
    series: Mapping[str, Sequence[TrendPoint]],
    runs: Sequence[str],
    title: str,
    *,
    y_label: str,
    y_range: tuple[float, float],
    y_format: Fmt | None = None,
    subtitle: str = "",
    marks: bool = False,
) -> Markup:
    """Each series over the runs (oldest left), one colour per series; with ``marks``, a run
    significantly worse than the one before stands out (a red triangle in a ring)."""
    if not runs or not series:
        return note(title, "No run of this suite yet.")
    keys = [Key("line", PALETTE[i % len(PALETTE)], n) for i, n in enumerate(series)]
    keys += TREND_KEYS if marks else []
    legend_svg, top = legend(keys, head_height(subtitle))
    n = len(runs)
    box = Box(70, top + 8, W - 24, top + 208, -0.5 if n > 1 else -1, n - 0.5 if n > 1 else 1, *y_range)
    every = max(1, math.ceil(n / 8))
    shown = list(range(0, n, every))
    fmt = y_format or number(nice_step(y_range[1] - y_range[0]))
    parts = [
        legend_svg,
        x_axis(
            box,
            shown,
            str,
            f"run, oldest to newest ({n} run{'s' if n != 1 else ''})",
            labels=[runs[i] for i in shown],
        ),
        y_axis(box, ticks(*y_range), fmt, y_label),
    ]
    for i, (name, points) in enumerate(series.items()):
        parts.append(_trend_series(box, points, PALETTE[i % len(PALETTE)], name))
    return chart(title, "".join(parts), box.bottom + 46, subtitle=subtitle, kind="trend")


# ---------------------------------------------------------------- trigger rates


def rates(rows: Sequence[tuple[str, float | None, float | None, float | None, bool]], title: str) -> Markup:
    """One bar per query: its trigger rate with the Wilson 95% interval as a whisker; green when the
    skill should fire there, grey when it should not (there, a long bar is a false fire)."""
    if not rows:
        return Markup("")
    height = PAD + 22 * len(rows) + 20
    x0, x1 = 160, W - 30
    parts = [f'<text x="{x0}" y="14" class="tick">trigger rate (0 – 100%), whisker: 95% interval</text>']
    for pct in (0, 50, 100):
        x = scale(pct, 0, 100, x0, x1)
        parts.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 10}" class="grid"/>'
            f'<text x="{x:.1f}" y="{height - 2}" class="tick">{pct}%</text>'
        )
    for i, (label, rate, low, high, should) in enumerate(rows):
        y = PAD + 22 * i
        parts.append(f'<text x="4" y="{y + 4}" class="label">{escape(label[:24])}</text>')
        if rate is None:
            parts.append(f'<text x="{x0}" y="{y + 4}" class="tick">no counted session</text>')
            continue
        width = scale(rate, 0, 1, 0, x1 - x0)
        cls = "pos" if should else "zero"
        parts.append(
            f'<rect x="{x0}" y="{y - 7}" width="{max(width, 1):.1f}" height="14" class="{cls}">'
            f"<title>{escape(label)}: {rate:.0%}</title></rect>"
        )
        if low is not None and high is not None:
            a, b = scale(low, 0, 1, x0, x1), scale(high, 0, 1, x0, x1)
            parts.append(f'<line x1="{a:.1f}" y1="{y}" x2="{b:.1f}" y2="{y}" class="axis"/>')
    return frame("".join(parts), title, height)
