"""Server-rendered SVG time charts for the history page: no library, no CDN, no script
needed to read them (each day's values are in a <title> for hover; app.js shows them in
a tooltip too)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from markupsafe import Markup, escape

from mappings.actions import action_name

WIDTH, HEIGHT = 900, 150
LEFT, RIGHT, TOP, BOTTOM = 56, 8, 8, 22
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

Values = Sequence[float | None]


@dataclass
class Layer:
    kind: str  # "band", "line", "bars", "marks"
    values: Values = ()
    high: Values = ()  # bands: upper edge (values = lower edge); bars: stacked tops
    css: str = ""
    weak: Sequence[bool] = ()  # lines: points drawn faded (low confidence)
    marks: list[tuple[int, str, str]] = field(default_factory=list)  # (index, class, text)


@dataclass
class Chart:
    title: str
    days: list[date]
    layers: list[Layer]
    lo: float = 0.0
    hi: float = 1.0
    unit: str = ""
    tips: list[str] = field(default_factory=list)  # one hover text per day
    ticks: tuple[float, ...] = ()
    height: int = HEIGHT
    axis: str = ""  # the y axis's unit, written along it ("h", "ms", "score 0-1")


def _x(i: int, n: int) -> float:
    step = (WIDTH - LEFT - RIGHT) / max(n, 1)
    return LEFT + (i + 0.5) * step


def _y(v: float, c: Chart) -> float:
    span = (c.hi - c.lo) or 1.0
    frac = (max(c.lo, min(c.hi, v)) - c.lo) / span
    return TOP + (1 - frac) * (c.height - TOP - BOTTOM)


def date_ticks(days: list[date]) -> list[tuple[int, str]]:
    """Where to label the x axis: years over long spans, months, or Mondays."""
    n = len(days)
    if n == 0:
        return []
    span = (days[-1] - days[0]).days
    out = []
    for i, d in enumerate(days):
        prev = days[i - 1] if i else None
        if span > 3 * 366:
            if prev is None or d.year != prev.year:
                out.append((i, str(d.year)))
        elif span > 75:
            if prev is None or d.month != prev.month:
                label = MONTHS[d.month - 1] + (f" {d.year}" if d.month == 1 or not out else "")
                out.append((i, label))
        elif d.weekday() == 0:
            out.append((i, f"{d.day} {MONTHS[d.month - 1]}"))
    return out


def _runs(values: Values, weak: Sequence[bool]) -> list[tuple[bool, list[int]]]:
    """Runs of consecutive known points of the same strength; a gap breaks the line."""
    runs: list[tuple[bool, list[int]]] = []
    for i, v in enumerate(values):
        if v is None:
            runs.append((False, []))
            continue
        w = bool(weak[i]) if weak else False
        if runs and runs[-1][1] and runs[-1][0] == w and runs[-1][1][-1] == i - 1:
            runs[-1][1].append(i)
        else:
            # Overlap by one point so a strong and a weak stretch join up.
            start = [i - 1] if runs and runs[-1][1] and runs[-1][1][-1] == i - 1 else []
            runs.append((w, [*start, i]))
    return [r for r in runs if r[1]]


def render(c: Chart) -> Markup:
    n = len(c.days)
    h = c.height
    label = f"{c.title}" + (f" ({c.unit})" if c.unit else "")
    parts = [
        f'<svg class="hchart" viewBox="0 0 {WIDTH} {h}" role="img" '
        f'aria-label="{escape(label)}, {len(c.days)} points" preserveAspectRatio="none">'
    ]
    parts.extend(_axes(c))
    for layer in c.layers:
        draw = _LAYERS.get(layer.kind)
        if draw is not None:
            parts.extend(draw(layer, c))
    if not any(v is not None for layer in c.layers for v in layer.values):
        parts.append(
            f'<text class="empty" x="{WIDTH / 2}" y="{h / 2}">no {escape(c.title.lower())} '
            "data in this range</text>"
        )
    if c.tips:
        step = (WIDTH - LEFT - RIGHT) / max(n, 1)
        for i, tip in enumerate(c.tips):
            parts.append(
                f'<rect class="hit" x="{LEFT + i * step:.1f}" y="{TOP}" width="{step:.2f}" '
                f'height="{h - TOP - BOTTOM}" data-tip="{escape(tip)}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _axes(c: Chart) -> list[str]:
    """Grid lines with the value labels, then date ticks (as many as fit)."""
    n, h = len(c.days), c.height
    parts = []
    for t in c.ticks or (c.lo, (c.lo + c.hi) / 2, c.hi):
        y = _y(t, c)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        parts.append(f'<text class="ylab" x="{LEFT - 4}" y="{y + 3:.1f}">{_num(t)}</text>')
    if c.axis:
        mid = (TOP + h - BOTTOM) / 2
        parts.append(
            f'<text class="yunit" x="10" y="{mid:.1f}" transform="rotate(-90 10 {mid:.1f})">'
            f"{escape(c.axis)}</text>"
        )
    last_x = -1e9
    for i, text in date_ticks(c.days):
        x = _x(i, n)
        if x - last_x < 7 * max(len(text), 4):  # too close to the label before: skip it
            continue
        last_x = x
        parts.append(f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{h - BOTTOM}"/>')
        parts.append(f'<text class="xlab" x="{x:.1f}" y="{h - 6}">{escape(text)}</text>')
    return parts


def _line(layer: Layer, c: Chart) -> list[str]:
    n = len(c.days)
    out = []
    for weak, idx in _runs(layer.values, layer.weak):
        css = f"{layer.css} weak" if weak else layer.css
        if len(idx) == 1:
            i = idx[0]
            out.append(
                f'<circle class="{css} dot" cx="{_x(i, n):.1f}" '
                f'cy="{_y(layer.values[i], c):.1f}" r="2"/>'  # type: ignore[arg-type]
            )
            continue
        pts = " ".join(f"{_x(i, n):.1f},{_y(layer.values[i], c):.1f}" for i in idx)  # type: ignore[arg-type]
        out.append(f'<polyline class="{css}" points="{pts}"/>')
    return out


def _bars(layer: Layer, c: Chart) -> list[str]:
    n = len(c.days)
    bar_w = max(1.0, (WIDTH - LEFT - RIGHT) / max(n, 1) * 0.7)
    out = []
    for i, v in enumerate(layer.values):
        top = layer.high[i] if layer.high else v
        if v is None or top is None:
            continue
        y0, y1 = _y(v if layer.high else c.lo, c), _y(top, c)
        out.append(
            f'<rect class="{layer.css}" x="{_x(i, n) - bar_w / 2:.1f}" '
            f'y="{min(y0, y1):.1f}" width="{bar_w:.1f}" height="{abs(y0 - y1):.1f}"/>'
        )
    return out


def _marks(layer: Layer, c: Chart) -> list[str]:
    n, h = len(c.days), c.height
    return [
        f'<circle class="mark {css}" cx="{_x(i, n):.1f}" cy="{h - BOTTOM - 5}" r="4">'
        f"<title>{escape(text)}</title></circle>"
        for i, css, text in layer.marks
    ]


def _band(layer: Layer, c: Chart) -> list[str]:
    n = len(c.days)
    out = []
    run: list[int] = []
    for i in [*range(n), -1]:
        ok = i >= 0 and layer.values[i] is not None and layer.high[i] is not None
        if ok:
            run.append(i)
            continue
        if run:
            top = [f"{_x(j, n):.1f},{_y(layer.high[j], c):.1f}" for j in run]  # type: ignore[arg-type]
            low = [f"{_x(j, n):.1f},{_y(layer.values[j], c):.1f}" for j in reversed(run)]  # type: ignore[arg-type]
            if len(run) == 1:  # a lone day: a short vertical bar
                j = run[0]
                out.append(
                    f'<line class="{layer.css} lone" x1="{_x(j, n):.1f}" x2="{_x(j, n):.1f}" '
                    f'y1="{_y(layer.high[j], c):.1f}" y2="{_y(layer.values[j], c):.1f}"/>'  # type: ignore[arg-type]
                )
            else:
                out.append(f'<polygon class="{layer.css}" points="{" ".join(top + low)}"/>')
            run = []
    return out


# How each kind of layer is drawn; a kind not here draws nothing.
_LAYERS: dict[str, Callable[[Layer, Chart], list[str]]] = {
    "band": _band,
    "line": _line,
    "bars": _bars,
    "marks": _marks,
}


def nice(v: float) -> float:
    """The round number (1, 2, 2.5 or 5 times a power of ten) at or above v."""
    import math

    if v <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(v))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= v)


def _num(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


RESPONSE_CLASS = {"accepted": "acc", "ignored": "ign", "rescheduled": "res", "expired": "exp"}


def page_charts(doc: dict, weak_below: float) -> dict[str, list[tuple[str, Markup]]]:
    """The history page's charts from `bridge.web.history.history`'s document."""
    from mappings.actions import METERS

    rows = doc["rows"]
    days = [date.fromisoformat(r["date"]) for r in rows]
    index = {d: i for i, d in enumerate(days)}
    week = doc["bin"] == "week"

    def col(key: str, scale: float = 1.0) -> list[float | None]:
        return [None if r.get(key) is None else r[key] * scale for r in rows]

    def when(r: dict) -> str:
        return ("week of " if week else "") + r["date"]

    marks = []
    for a in doc["answers"]:
        d = date.fromisoformat(a["date"])
        if week:
            d = d.fromordinal(d.toordinal() - d.weekday())
        if d in index:
            text = f"{a['date']} {a['slot_name']}: {action_name(a['action'])} {a['response']}"
            marks.append((index[d], RESPONSE_CLASS.get(a["response"], "exp"), text))
    meters = []
    for m in METERS:
        conf = col(f"{m}_confidence")
        tips = []
        for r in rows:
            if r[m] is None:
                tips.append(f"{when(r)}: {m} —")
                continue
            stale = " · stale" if r[f"{m}_stale"] else ""
            tips.append(
                f"{when(r)}: {m} {r[m]:.2f} (slots {r[f'{m}_min']:.2f}–{r[f'{m}_max']:.2f}), "
                f"confidence {r[f'{m}_confidence']:.2f}{stale}"
            )
        chart = Chart(
            m.title(),
            days,
            [
                Layer("band", col(f"{m}_min"), col(f"{m}_max"), "range"),
                Layer(
                    "line",
                    col(m),
                    css="mean",
                    weak=[c is not None and c < weak_below for c in conf],
                ),
                Layer("marks", marks=marks),
            ],
            tips=tips,
            ticks=(0.0, 0.5, 1.0),
            axis="score 0–1",
        )
        meters.append((m, render(chart)))

    def tip(r: dict, *pairs: tuple[str, str, str]) -> str:
        shown = [f"{name} {r[k]:{f}}" for name, k, f in pairs if r.get(k) is not None]
        return f"{when(r)}: " + (", ".join(shown) or "no data")

    inputs: list[tuple[str, Markup]] = []

    def add(key: str, chart: Chart) -> None:
        inputs.append((key, render(chart)))

    hours = col("sleep_hours")
    deep = [
        None if h is None or s is None else h * s
        for h, s in zip(hours, col("deep_share"), strict=True)
    ]
    rem = [
        None if h is None or s is None else h * s
        for h, s in zip(hours, col("rem_share"), strict=True)
    ]
    both = [None if d is None or r is None else d + r for d, r in zip(deep, rem, strict=True)]
    add(
        "sleep",
        Chart(
            "Sleep",
            days,
            [
                Layer("bars", hours, css="sleep"),
                Layer("bars", deep, css="deep"),
                Layer("bars", deep, both, "rem"),
            ],
            hi=max([10.0, *(h for h in hours if h is not None)]),
            unit="h asleep; deep and REM below",
            axis="hours",
            tips=[
                tip(
                    r,
                    ("asleep h", "sleep_hours", ".1f"),
                    ("deep", "deep_share", ".0%"),
                    ("REM", "rem_share", ".0%"),
                )
                for r in rows
            ],
            ticks=(0.0, 4.0, 8.0),
        ),
    )
    for key, title, unit in (("hrv", "HRV", "ms"), ("resting_hr", "Resting heart rate", "bpm")):
        value_key = "hrv_ms" if key == "hrv" else key
        values = col(value_key)
        known = [v for v in [*values, *col(f"{key}_low"), *col(f"{key}_high")] if v is not None]
        step = nice(max((max(known, default=1.0) - min(known, default=0.0)) / 4, 1.0))
        lo = step * (min(known, default=0.0) // step)
        hi = step * -(-max(known, default=1.0) // step)
        add(
            key,
            Chart(
                title,
                days,
                [
                    Layer("band", col(f"{key}_low"), col(f"{key}_high"), "baseline"),
                    Layer("line", col(f"{key}_baseline"), css="base"),
                    Layer("line", values, css="value"),
                ],
                lo=lo,
                hi=hi,
                unit=f"{unit}; band: your baseline",
                axis=unit,
                tips=[
                    tip(r, (title, value_key, ".0f"), ("baseline", f"{key}_baseline", ".0f"))
                    for r in rows
                ],
                ticks=(lo, (lo + hi) / 2, hi),
            ),
        )
    for key, title, unit, fmt, axis in (
        ("steps", "Steps", "per day", ",.0f", "steps"),
        ("stress", "Stress", "0-100", ".0f", "0–100"),
        ("calendar_hours", "Calendar load", "busy hours", ".1f", "hours"),
    ):
        values = col(key)
        top = 100.0 if key == "stress" else nice(max([v for v in values if v], default=1.0))
        kind = "line" if key == "stress" else "bars"
        add(
            key,
            Chart(
                title,
                days,
                [Layer(kind, values, css=key)],
                hi=top,
                unit=unit,
                axis=axis,
                tips=[tip(r, (title, key, fmt)) for r in rows],
                ticks=(0.0, top / 2, top),
            ),
        )
    return {"meters": meters, "inputs": inputs}
