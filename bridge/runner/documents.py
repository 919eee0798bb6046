"""Observation and history as JSON documents (`rhythm-bridge recommend --state --history`).

Checks the shapes the runner contract promises and names the file and field that is
wrong, so a hand-written or exported document fails with one clear line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge.errors import InputError
from mappings.actions import ACTIONS, METERS, RESPONSES


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: not valid JSON: {err}") from None


def _meter(where: str, name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InputError(f"{where}: '{name}' must be a number in [0, 1] or null, got {value!r}")
    return float(value)


def _slot(where: str, doc: dict[str, Any], key: str, high: int) -> int:
    value = doc.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise InputError(f"{where}: '{key}' must be an integer 0-{high}, got {value!r}")
    return value


def check_observation(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise InputError(f"{where}: the state must be a JSON object with slot and the 5 meters")
    if "slot" not in doc:
        raise InputError(f"{where}: 'slot' is missing (0 morning, 1 afternoon, 2 evening, 3 night)")
    obs = dict(doc)
    obs["slot"] = _slot(where, doc, "slot", 3)
    obs["day"] = _slot(where, doc, "day", 6)
    obs["timestep"] = (
        _slot(where, doc, "timestep", 27) if "timestep" in doc else (obs["day"] * 4 + obs["slot"])
    )
    for m in METERS:
        obs[m] = _meter(where, m, doc.get(m))
    event = doc.get("active_event")
    if event is not None and event not in ACTIONS:
        raise InputError(f"{where}: 'active_event' must be one of the 10 actions or null")
    return obs


def check_history(doc: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(doc, list):
        raise InputError(f"{where}: the history must be a JSON array of interactions")
    out = []
    for i, item in enumerate(doc):
        at = f"{where}: item {i}"
        if not isinstance(item, dict):
            raise InputError(f"{at}: must be an object")
        if item.get("action") not in ACTIONS:
            raise InputError(f"{at}: 'action' must be one of {', '.join(ACTIONS)}")
        if item.get("response") not in RESPONSES:
            raise InputError(f"{at}: 'response' must be one of {', '.join(RESPONSES)}")
        meters, deltas = item.get("meters") or {}, item.get("meter_deltas") or {}
        if not isinstance(meters, dict) or not isinstance(deltas, dict):
            raise InputError(f"{at}: 'meters' and 'meter_deltas' must be objects")
        for m, v in deltas.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise InputError(f"{at}: meter_deltas '{m}' must be a number or null")
        out.append(
            {
                "day": _slot(at, item, "day", 6),
                "slot": _slot(at, item, "slot", 3),
                "meters": {m: _meter(at, m, meters.get(m)) for m in METERS},
                "action": item["action"],
                "response": item["response"],
                "meter_deltas": {m: deltas.get(m) for m in METERS},
            }
        )
    return out


def load_documents(
    state: Path, history: Path | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The observation from `state` and the interactions from `history` (empty if None)."""
    obs = check_observation(_load(state), str(state))
    hist = check_history(_load(history), str(history)) if history else []
    return obs, hist
