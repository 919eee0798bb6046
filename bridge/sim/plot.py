"""The acceptance-curve plot of `rhythm-bridge eval --plot FILE`, written as plain SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from bridge.sim.evaluate import ROLLING, rolling

COLORS = {
    "oracle": "#222222",
    "bundled": "#d62728",
    "heuristic": "#1f77b4",
    "no-prior": "#2ca02c",
    "linear-ts": "#ff7f0e",
    "random": "#999999",
}
W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 420, 60, 150, 40, 50


def _frame(title: str) -> list[str]:
    """The SVG's start: background, title and the 0-1 grid of the y axis."""
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{escape(title)}</text>',
    ]
    for v in np.linspace(0, 1, 6):
        yv = TOP + (1.0 - v) * ph
        out.append(
            f'<line x1="{LEFT}" y1="{yv:.1f}" x2="{LEFT + pw}" y2="{yv:.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 8}" y="{yv + 4:.1f}" text-anchor="end">{v:.1f}</text>'
        )
    return out


def _write(text: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def acceptance_svg(report: dict[str, Any]) -> str:
    """Rolling acceptance per interaction index, one line per runner."""
    slots = report["slots"]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(i: float) -> float:
        return LEFT + (i - 1) / max(1, slots - 1) * pw

    def y(v: float) -> float:
        return TOP + (1.0 - v) * ph

    title = (
        f"Acceptance ({ROLLING}-interaction rolling mean), "
        f"{report.get('family', 'rhythm')} split={report['split']}, "
        f"N={report['people']} simulated people"
    )
    out = _frame(title)
    for i in (1, 8, 28, 56, 84, slots):
        out.append(
            f'<line x1="{x(i):.1f}" y1="{TOP}" x2="{x(i):.1f}" y2="{TOP + ph}" stroke="#eee"/>'
            f'<text x="{x(i):.1f}" y="{TOP + ph + 16}" text-anchor="middle">{i}</text>'
        )
    out.append(
        f'<text x="{LEFT + pw / 2}" y="{H - 10}" text-anchor="middle">interaction</text>'
        f'<text x="16" y="{TOP + ph / 2}" transform="rotate(-90 16 {TOP + ph / 2})" '
        'text-anchor="middle">acceptance rate</text>'
    )
    for k, (name, r) in enumerate(report["runners"].items()):
        curve = rolling(np.array(r["acceptance_curve"]))
        pts = " ".join(f"{x(i + 1):.1f},{y(v):.1f}" for i, v in enumerate(curve))
        color = COLORS.get(name, "#9467bd")
        ly = TOP + 10 + 20 * k
        out.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>'
            f'<line x1="{LEFT + pw + 12}" y1="{ly}" x2="{LEFT + pw + 36}" y2="{ly}" '
            f'stroke="{color}" stroke-width="3"/>'
            f'<text x="{LEFT + pw + 42}" y="{ly + 4}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_plot(report: dict[str, Any], path: Path) -> Path:
    return _write(acceptance_svg(report), path)


LOFO_BARS = ("random", "linear-ts", "bundled", "oracle")


def lofo_svg(report: dict[str, Any]) -> str:
    """Acceptance over interactions 9-28 per held-out family and split, one bar per runner."""
    rows = report["summary"]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    group = pw / max(1, len(rows))
    bar = group / (len(LOFO_BARS) + 1)

    def y(v: float) -> float:
        return TOP + (1.0 - v) * ph

    title = (
        f"Held-out family (leave one out): acceptance 9-28, N={report['people_per_family']} "
        "per family and split"
    )
    out = _frame(title)
    for g, row in enumerate(rows):
        x0 = LEFT + g * group
        for k, name in enumerate(LOFO_BARS):
            v = float(row["acc_9_28"].get(name, 0.0))
            out.append(
                f'<rect x="{x0 + (k + 0.5) * bar:.1f}" y="{y(v):.1f}" width="{bar * 0.9:.1f}" '
                f'height="{TOP + ph - y(v):.1f}" fill="{COLORS.get(name, "#9467bd")}"/>'
            )
        out.append(
            f'<text x="{x0 + group / 2:.1f}" y="{TOP + ph + 16}" text-anchor="middle">'
            f"{escape(row['held_out'])}</text>"
            f'<text x="{x0 + group / 2:.1f}" y="{TOP + ph + 30}" text-anchor="middle">'
            f"{escape(row['split'])}</text>"
        )
    for k, name in enumerate(LOFO_BARS):
        ly = TOP + 10 + 20 * k
        out.append(
            f'<rect x="{LEFT + pw + 12}" y="{ly - 6}" width="24" height="10" '
            f'fill="{COLORS.get(name, "#9467bd")}"/>'
            f'<text x="{LEFT + pw + 42}" y="{ly + 4}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_lofo_plot(report: dict[str, Any], path: Path) -> Path:
    return _write(lofo_svg(report), path)
