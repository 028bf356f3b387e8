"""Small server-rendered SVG charts: they work offline, need no script, and escape every label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2"]
W, H, PAD = 640, 220, 40


def _scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    return a if hi == lo else a + (v - lo) / (hi - lo) * (b - a)


def _frame(body: str, title: str, height: int = H) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {W} {height}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{body}</svg>'
    )


def distribution(values: Mapping[str, Sequence[float]], lo: float, hi: float, title: str) -> Markup:
    """One row per variant: every score as a dot, and the mean as a bar."""
    rows = list(values.items())
    height = PAD + 34 * max(len(rows), 1) + 10
    parts = []
    for tick in range(int(lo), int(hi) + 1, max(1, int((hi - lo) / 5) or 1)):
        x = _scale(tick, lo, hi, 120, W - 20)
        parts.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 10}" class="grid"/>'
            f'<text x="{x:.1f}" y="14" class="tick">{tick}</text>'
        )
    for i, (name, vals) in enumerate(rows):
        y = PAD + 34 * i
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<text x="4" y="{y + 4}" class="label">{escape(name)}</text>')
        for j, v in enumerate(vals):
            x = _scale(v, lo, hi, 120, W - 20)
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y + (j % 5 - 2) * 3}" r="3" fill="{color}" fill-opacity="0.5"/>'
            )
        if vals:
            mean = sum(vals) / len(vals)
            x = _scale(mean, lo, hi, 120, W - 20)
            parts.append(
                f'<line x1="{x:.1f}" y1="{y - 12}" x2="{x:.1f}" y2="{y + 12}" stroke="{color}" '
                f'stroke-width="3"><title>mean {mean:.2f}</title></line>'
            )
    return _frame("".join(parts), title, height)


def differences(items: Sequence[tuple[str, float]], title: str) -> Markup:
    """Per-case paired differences as bars around zero (green: treatment better)."""
    if not items:
        return Markup("")
    span = max(abs(v) for _, v in items) or 1.0
    n = len(items)
    bar = max(2.0, (W - 2 * PAD) / n - 2)
    zero = H / 2
    parts = [
        f'<line x1="{PAD}" y1="{zero}" x2="{W - PAD}" y2="{zero}" class="axis"/>',
        f'<text x="4" y="24" class="tick">+{span:.2g}</text><text x="4" y="{H - 8}" class="tick">-{span:.2g}</text>',
    ]
    for i, (label, v) in enumerate(items):
        x = PAD + i * (W - 2 * PAD) / n
        h = abs(v) / span * (H / 2 - 20)
        y = zero - h if v > 0 else zero
        cls = "pos" if v > 0 else "neg" if v < 0 else "zero"
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{max(h, 1):.1f}" class="{cls}">'
            f"<title>{escape(label)}: {v:+.2f}</title></rect>"
        )
    return _frame("".join(parts), title)


def scatter(
    points: Mapping[str, Sequence[tuple[float, float]]], x_label: str, y_label: str, title: str
) -> Markup:
    """Score (y) against cost or latency (x), one colour per variant."""
    xs = [x for pts in points.values() for x, _ in pts]
    ys = [y for pts in points.values() for _, y in pts]
    if not xs:
        return Markup("")
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), min(ys), max(ys)
    parts = [
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 10}" y2="{H - PAD}" class="axis"/>',
        f'<line x1="{PAD}" y1="10" x2="{PAD}" y2="{H - PAD}" class="axis"/>',
        f'<text x="{W / 2}" y="{H - 8}" class="tick">{escape(x_label)} ({x_lo:.3g} – {x_hi:.3g})</text>',
        f'<text x="4" y="20" class="tick">{escape(y_label)}</text>',
    ]
    for i, (name, pts) in enumerate(points.items()):
        color = PALETTE[i % len(PALETTE)]
        for x, y in pts:
            cx = _scale(x, x_lo, x_hi, PAD + 6, W - 16)
            cy = _scale(y, y_lo, y_hi, H - PAD - 6, 16)
            parts.append(
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}" fill-opacity="0.6">'
                f"<title>{escape(name)}: {y:.2f} at {x:.3g}</title></circle>"
            )
        parts.append(
            f'<text x="{W - 120}" y="{24 + 14 * i}" fill="{color}" class="legend">{escape(name)}</text>'
        )
    return _frame("".join(parts), title)


def rates(rows: Sequence[tuple[str, float | None, float | None, float | None, bool]], title: str) -> Markup:
    """One bar per query: its trigger rate with the Wilson 95% interval as a whisker; green when the
    skill should fire there, grey when it should not (there, a long bar is a false fire)."""
    if not rows:
        return Markup("")
    height = PAD + 22 * len(rows) + 20
    x0, x1 = 160, W - 30
    parts = [f'<text x="{x0}" y="14" class="tick">trigger rate (0 – 100%), whisker: 95% interval</text>']
    for pct in (0, 50, 100):
        x = _scale(pct, 0, 100, x0, x1)
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
        width = _scale(rate, 0, 1, 0, x1 - x0)
        cls = "pos" if should else "zero"
        parts.append(
            f'<rect x="{x0}" y="{y - 7}" width="{max(width, 1):.1f}" height="14" class="{cls}">'
            f"<title>{escape(label)}: {rate:.0%}</title></rect>"
        )
        if low is not None and high is not None:
            a, b = _scale(low, 0, 1, x0, x1), _scale(high, 0, 1, x0, x1)
            parts.append(f'<line x1="{a:.1f}" y1="{y}" x2="{b:.1f}" y2="{y}" class="axis"/>')
    return _frame("".join(parts), title, height)
