"""A tiny inline-SVG trend line per meter: no external assets, no script."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

WIDTH, HEIGHT, PAD = 160, 40, 3


def _runs(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Consecutive non-empty points; a slot without a value breaks the line."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, v))
    return [r for r in runs if r]


def sparkline(values: Sequence[float | None], label: str) -> Markup:
    """An SVG line of 0..1 values, oldest left; described for screen readers."""
    known = [v for v in values if v is not None]
    if known:
        desc = (
            f"{label}, last {len(values)} slots: lowest {min(known):.2f}, "
            f"highest {max(known):.2f}, latest {known[-1]:.2f}"
        )
    else:
        desc = f"{label}: no values in the last 7 days"
    step = (WIDTH - 2 * PAD) / max(1, len(values) - 1)

    def xy(i: int, v: float) -> str:
        x = PAD + i * step
        y = PAD + (1 - max(0.0, min(1.0, v))) * (HEIGHT - 2 * PAD)
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<svg class="trend" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{Markup.escape(desc)}" preserveAspectRatio="none">',
        f'<line class="mid" x1="0" x2="{WIDTH}" y1="{HEIGHT / 2}" y2="{HEIGHT / 2}"/>',
    ]
    for run in _runs(values):
        if len(run) == 1:
            i, v = run[0]
            x, y = xy(i, v).split(",")
            parts.append(f'<circle class="pt" cx="{x}" cy="{y}" r="1.8"/>')
        else:
            points = " ".join(xy(i, v) for i, v in run)
            parts.append(f'<polyline class="line" points="{points}"/>')
    if known:
        last_i = max(i for i, v in enumerate(values) if v is not None)
        x, y = xy(last_i, values[last_i]).split(",")  # type: ignore[arg-type]
        parts.append(f'<circle class="last" cx="{x}" cy="{y}" r="2.6"/>')
    parts.append("</svg>")
    return Markup("".join(parts))
