"""A readable breakdown of a slot's meters from their provenance.

Every meter is 0.5 plus the sum of its inputs' effects (weight x (score - 0.5), over the
weights of the inputs that had evidence), so the breakdown adds up: it shows which inputs
moved the meter up or down, by how much, and what was missing.
"""

from __future__ import annotations

from typing import Any

from mappings.actions import METERS


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


# Count nouns of the units, made singular for a value of exactly 1 ("1 meeting today").
_PLURALS = ("meetings", "steps", "days", "events", "tasks")


def count_unit(value: float, unit: str) -> str:
    """The unit with its first count noun in the singular when the value is 1; a noun after
    a number ("min in 7 days") counts that number, not the value, and stays."""
    if round(value, 6) != 1:
        return unit
    words = unit.split(" ")
    for i, word in enumerate(words):
        if word[:1].isdigit():
            break
        if word.split("/")[-1] in _PLURALS:
            words[i] = word[:-1]
            break
    return " ".join(words)


def distinct_titles(titles: list[str]) -> str:
    """'A; B (2x)': each title once, in order, with how often it occurs when more than once."""
    counts: dict[str, int] = {}
    for t in titles:
        counts[t] = counts.get(t, 0) + 1
    return "; ".join(t + (f" ({n}x)" if n > 1 else "") for t, n in counts.items())


def format_value(value: float, unit: str) -> str:
    """An input's raw value in words a person reads at a glance."""
    unit = count_unit(value, unit)
    if unit == "min" and value >= 90:
        return f"{value / 60:.1f} h"
    if unit.startswith("min"):
        return f"{value:.0f} {unit}"
    if "share" in unit:
        rest = " ".join(unit.replace("share", "").split())
        return f"{value * 100:.0f} % {rest}".strip()
    return f"{_number(value)} {unit}".strip()


def _baseline(base: dict[str, float], unit: str) -> str:
    if not base:
        return ""
    if "usual_per_day" in base:
        return f" (usual {_number(base['usual_per_day'])}/day)"
    medians = {k.removesuffix("_median"): v for k, v in base.items() if k.endswith("_median")}
    if len(medians) == 1:
        return f" (your usual {_number(next(iter(medians.values())))})"
    parts = [
        f"{label}: {_number(base.get(label + '_latest', float('nan')))} vs usual {_number(v)}"
        for label, v in sorted(medians.items())
    ]
    return "; ".join(parts)


def explain_meter(
    meter: str, value: float | None, confidence: float | None, prov: dict
) -> list[str]:
    if value is None:
        return [f"{meter:<11} —     {prov.get('reason', 'no evidence')}"]
    lines = [f"{meter:<11} {value:.2f}  confidence {confidence or 0:.2f}"]
    inputs = sorted(prov.get("inputs", []), key=lambda i: (-abs(i.get("effect", 0.0)), i["name"]))
    # An input's share: its weight over the weights of the inputs that had evidence.
    total = sum(i["weight"] for i in inputs) or 1.0
    for item in inputs:
        effect = item.get("effect", 0.0)
        shown = "none in the next 7 days" if item["name"] == "deadline_runway" else ""
        if "value" in item:
            shown = format_value(item["value"], item.get("unit", ""))
            shown += _baseline(item.get("baseline", {}), item.get("unit", ""))
        share = item["weight"] / total
        lines.append(
            f"  {'+' if effect > 0 else '-' if effect < 0 else ' '} {item['name']:<17}"
            f"{shown:<38} (score {item['score']:.3f} - 0.5) x share {share:.3f}"
            f" (weight {item['weight']:.2f}/{total:.2f}) = {effect:+.3f}"
        )
        for what, titles in sorted(item.get("tasks", {}).items()):
            lines.append(f"      {what.replace('_', ' ')}: {distinct_titles(titles)}")
    if prov.get("missing"):
        lines.append(f"    no evidence yet: {', '.join(prov['missing'])}")
    return lines


def moves(now: dict, before: dict, most: int = 4) -> list[tuple[str, float]]:
    """The inputs whose effect changed most between two provenances of one meter.

    The effects add up to the meter, so these changes add up to the meter's delta.
    """
    a = {i["name"]: i.get("effect", 0.0) for i in now.get("inputs", [])}
    b = {i["name"]: i.get("effect", 0.0) for i in before.get("inputs", [])}
    diff = {n: round(a.get(n, 0.0) - b.get(n, 0.0), 4) for n in a.keys() | b.keys()}
    ranked = sorted(
        ((n, d) for n, d in diff.items() if abs(d) >= 0.0005), key=lambda x: (-abs(x[1]), x[0])
    )
    return ranked[:most]


def explain_slot(doc: dict[str, Any], before: dict[str, Any] | None = None) -> list[str]:
    """Lines explaining every meter of one slot document (the snapshot's slot shape);
    with the slot before, also which inputs moved each meter since then."""
    head = (
        f"{doc['date']} {doc['slot_name']} (timestep {doc['timestep']}), "
        f"mapping {doc.get('mapping_version') or '?'}; a meter = 0.50 + the effects below, "
        "each (score - 0.5) x its share (its weight over the weights of the inputs with evidence)"
    )
    lines = [head]
    for m in METERS:
        lines += [
            "  " + line
            for line in explain_meter(m, doc[m], doc["confidence"][m], doc["provenance"][m])
        ]
        delta = doc.get("deltas", {}).get(m)
        if delta is None:
            continue
        since = f"{before['date']} {before['slot_name']}" if before else "the slot before"
        line = f"      change since {since}: {delta:+.3f}"
        if before is not None and before.get(m) is not None:
            moved = moves(doc["provenance"][m], before["provenance"][m])
            if moved:
                line += " (" + ", ".join(f"{n} {d:+.3f}" for n, d in moved) + ")"
        lines.append(line)
    return lines
