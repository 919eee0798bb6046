"""What Home Assistant sees: one device, its entities' discovery configs and their states.

Follows Home Assistant's MQTT discovery rules: a config topic
`<discovery_prefix>/<component>/<node_id>/<object_id>/config` (ids of [a-zA-Z0-9_-]),
a `unique_id` per entity, one `device` shared by all, an availability topic with
`online`/`offline`. States are plain payloads (a number, an action, ON/OFF, or `None`,
which Home Assistant shows as unknown); attributes are JSON objects on their own topic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mappings.actions import ACTIONS, BELIEF_AXES, METERS, NOT_AN_ACTION, action_name
from mappings.checkins import ASKED, BY_NAME, SCALE

ONLINE, OFFLINE = "online", "offline"
ANSWERS = ("accept", "ignore", "reschedule")
NONE = "None"  # Home Assistant's payload for "unknown"
# The recommendation sensor's state when the calendar leaves no window in the look-ahead:
# one of the enum's options, so Home Assistant shows it (and automations can match it).
NO_WINDOW = "NO_WINDOW"
TOP_INPUTS = 3
# The question select (issue 42): the best title to label now, answered by choosing an
# option; its state reads "not answered" until the person chooses.
QUESTION = "question"
UNANSWERED = "Not answered yet"
QUESTION_CHOICES = {action_name(a): a for a in (*ACTIONS, NOT_AN_ACTION)}
ICONS = {
    "vitality": "mdi:heart-pulse",
    "cognition": "mdi:brain",
    "progress": "mdi:progress-check",
    "serenity": "mdi:meditation",
    "connection": "mdi:account-group",
}


@dataclass(frozen=True)
class Topics:
    """Every topic of one installation, derived from [mqtt] discovery_prefix and base_topic."""

    discovery_prefix: str
    base: str
    person: str = ""  # in a household, whose device this is (named so in Home Assistant)

    @property
    def node(self) -> str:
        # A discovery topic level allows only [a-zA-Z0-9_-].
        return re.sub(r"[^a-zA-Z0-9_-]", "_", self.base)

    @property
    def availability(self) -> str:
        """online while a rhythm-bridge process is connected; the last will says offline."""
        return f"{self.base}/availability"

    @property
    def listening(self) -> str:
        """online only while the daemon listens for button presses (`run --once` does not)."""
        return f"{self.base}/answers/availability"

    @property
    def ha_status(self) -> str:
        """Home Assistant's birth message: it says online after it restarts."""
        return f"{self.discovery_prefix}/status"

    def answer(self, kind: str) -> str:
        return f"{self.base}/answer/{kind}"

    def checkin(self, item: str) -> str:
        """Where Home Assistant's number entity sends a check-in answer (1-5)."""
        return f"{self.base}/checkin/{item}"

    @property
    def question_set(self) -> str:
        """Where Home Assistant's select sends the chosen label for the question's title."""
        return f"{self.base}/{QUESTION}/set"

    def config(self, component: str, object_id: str) -> str:
        return f"{self.discovery_prefix}/{component}/{self.node}/{object_id}/config"

    def state(self, object_id: str) -> str:
        return f"{self.base}/{object_id}/state"

    def attributes(self, object_id: str) -> str:
        return f"{self.base}/{object_id}/attributes"


@dataclass
class Messages:
    """Retained messages to publish: discovery configs, then states and attributes."""

    configs: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)


def _version() -> str:
    try:
        return version("rhythm-bridge")
    except PackageNotFoundError:
        return "unknown"


def device(topics: Topics) -> dict[str, Any]:
    return {
        "identifiers": [f"rhythm_bridge_{topics.node}"],
        "name": f"rhythm-bridge {topics.person}" if topics.person else "rhythm-bridge",
        "manufacturer": "rhythm-bridge",
        "model": "Personal rhythm daemon",
        "sw_version": _version(),
    }


def _base_config(topics: Topics, object_id: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "unique_id": f"{topics.node}_{object_id}",
        "device": device(topics),
        "origin": {"name": "rhythm-bridge", "sw_version": _version()},
        "availability": [
            {
                "topic": topics.availability,
                "payload_available": ONLINE,
                "payload_not_available": OFFLINE,
            }
        ],
    }


def _sensor(topics: Topics, object_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        **_base_config(topics, object_id, name),
        "state_topic": topics.state(object_id),
        "json_attributes_topic": topics.attributes(object_id),
        **extra,
    }


def source_object_id(source: str) -> str:
    return f"source_{source}"


def configs(topics: Topics, sources: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """object_id -> (component, discovery config) for every entity, in a stable order."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for m in METERS:
        out[m] = (
            "sensor",
            _sensor(
                topics,
                m,
                m.capitalize(),
                unit_of_measurement="%",
                state_class="measurement",
                suggested_display_precision=0,
                icon=ICONS[m],
            ),
        )
    out["recommendation"] = (
        "sensor",
        _sensor(
            topics,
            "recommendation",
            "Recommendation",
            device_class="enum",
            options=[*ACTIONS, NO_WINDOW],
            icon="mdi:lightbulb-on-outline",
        ),
    )
    for axis in BELIEF_AXES:
        object_id = f"belief_{axis}"
        out[object_id] = (
            "sensor",
            _sensor(
                topics,
                object_id,
                f"Belief {axis}",
                state_class="measurement",
                suggested_display_precision=2,
                icon="mdi:account-question-outline",
            ),
        )
    for source in sources:
        object_id = source_object_id(source)
        out[object_id] = (
            "binary_sensor",
            _sensor(
                topics,
                object_id,
                f"Source {source.replace('_', ' ')}",
                device_class="problem",
                entity_category="diagnostic",
                payload_on="ON",
                payload_off="OFF",
            ),
        )
    for kind in ANSWERS:
        button = _listening_config(topics, kind, kind.capitalize())
        out[kind] = (
            "button",
            {
                **button,
                "command_topic": topics.answer(kind),
                "payload_press": "PRESS",
                "qos": 1,
                "icon": {
                    "accept": "mdi:check",
                    "ignore": "mdi:close",
                    "reschedule": "mdi:calendar-refresh",
                }[kind],
            },
        )
    for item in ASKED:
        object_id = checkin_object_id(item)
        out[object_id] = (
            "number",
            {
                **_listening_config(topics, object_id, f"Check-in {item.replace('_', ' ')}"),
                "command_topic": topics.checkin(item),
                "state_topic": topics.state(object_id),
                "json_attributes_topic": topics.attributes(object_id),
                "min": SCALE[0],
                "max": SCALE[1],
                "step": 1,
                "mode": "slider",
                "qos": 1,
                "icon": "mdi:emoticon-outline",
            },
        )
    return out


def checkin_object_id(item: str) -> str:
    return f"checkin_{item}"


def _listening_config(topics: Topics, object_id: str, name: str) -> dict[str, Any]:
    """An entity that sends to the daemon: usable only while it is connected and listening."""
    config = _base_config(topics, object_id, name)
    config["availability"].append(
        {
            "topic": topics.listening,
            "payload_available": ONLINE,
            "payload_not_available": OFFLINE,
        }
    )
    config["availability_mode"] = "all"
    return config


def checkin_states(said: dict[str, float]) -> dict[str, tuple[str, dict[str, Any]]]:
    """This slot's answer per asked item; "None" (unknown) where none was given yet."""
    return {
        checkin_object_id(item): (
            f"{said[item]:g}" if item in said else NONE,
            {"question": BY_NAME[item].question, "scale": f"{SCALE[0]}-{SCALE[1]}"},
        )
        for item in ASKED
    }


def question_config(topics: Topics) -> dict[str, Any]:
    """A select: the calendar title whose answer would most likely set the most time right (in its
    attributes), answered by choosing what it is; pressable only while the daemon listens."""
    select = _sensor(topics, QUESTION, "Calendar question", icon="mdi:help-circle-outline")
    select["availability"].append(
        {"topic": topics.listening, "payload_available": ONLINE, "payload_not_available": OFFLINE}
    )
    select["availability_mode"] = "all"
    return {
        **select,
        "command_topic": topics.question_set,
        "options": [UNANSWERED, *QUESTION_CHOICES],
        "qos": 1,
    }


def question_state(question: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The select's state and attributes: the question (title, minutes, occurrences, guess,
    confidence) or none left."""
    return UNANSWERED, {"question": question is not None, **(question or {})}


def _top_inputs(provenance: dict[str, Any]) -> list[dict[str, Any]]:
    """The inputs that moved the value most, by the size of their effect."""
    inputs = [i for i in provenance.get("inputs", []) if isinstance(i, dict)]
    inputs.sort(key=lambda i: abs(i.get("effect") or 0.0), reverse=True)
    keys = ("name", "value", "unit", "effect")
    return [{k: i.get(k) for k in keys} for i in inputs[:TOP_INPUTS]]


def meter_states(slot: dict[str, Any] | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """object_id -> (state, attributes) for the five meters of the current slot."""
    out = {}
    for m in METERS:
        if slot is None:
            out[m] = (NONE, {"reason": "no meters for this slot yet"})
            continue
        value = slot[m]
        provenance = slot["provenance"].get(m) or {}
        attrs: dict[str, Any] = {
            "value": value,
            "confidence": slot["confidence"][m],
            "top_inputs": _top_inputs(provenance),
            "missing_inputs": provenance.get("missing", []),
            "date": slot["date"],
            "slot": slot["slot"],
            "slot_name": slot["slot_name"],
        }
        # How old the freshest input behind the value is ({newest, age_hours, stale});
        # None for slots stored before freshness was kept.
        freshness = (slot.get("freshness") or {}).get(m)
        attrs["staleness"] = freshness
        attrs["stale"] = freshness.get("stale") if isinstance(freshness, dict) else None
        if value is None and provenance.get("reason"):
            attrs["reason"] = provenance["reason"]
        out[m] = (NONE if value is None else f"{round(value * 100, 1)}", attrs)
    return out


def recommendation_states(
    rec: dict[str, Any] | None, no_window: dict[str, Any] | None = None
) -> dict[str, tuple[str, dict[str, Any]]]:
    """The recommendation and the belief [S, M, W] the runner made it with; NO_WINDOW with
    the reason and the next free window when the calendar leaves no room."""
    if rec is None:
        if no_window is not None:
            attrs = {k: no_window.get(k) for k in ("date", "slot", "slot_name", "reason")}
            attrs["next_window"] = no_window.get("next_window")
            out = {"recommendation": (NO_WINDOW, attrs)}
        else:
            out = {"recommendation": (NONE, {"reason": "no recommendation for this slot yet"})}
        for axis in BELIEF_AXES:
            out[f"belief_{axis}"] = (NONE, {})
        return out
    attrs = {
        k: rec.get(k)
        for k in (
            "id",
            "date",
            "slot",
            "slot_name",
            "rationale",
            "runner",
            "response",
            "channel",
            "answered_at",
        )
    }
    for key in ("window", "window_reason"):  # the free window it fits in, when known
        if key in rec:
            attrs[key] = rec[key]
    out = {"recommendation": (rec["action"], attrs)}
    belief = rec.get("belief") or []
    for i, axis in enumerate(BELIEF_AXES):
        value = belief[i] if i < len(belief) else None
        out[f"belief_{axis}"] = (
            NONE if value is None else f"{round(value, 4)}",
            {"recommendation_id": rec["id"], "axes": list(BELIEF_AXES), "belief": belief},
        )
    return out


def source_states(sources: list[dict[str, Any]], warnings: list[str]):
    """object_id -> (ON/OFF, attributes) per enabled source (ON: it needs attention)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for s in sources:
        if not s["enabled"]:
            continue
        warning = next((w for w in warnings if w.startswith(f"{s['source']}:")), None)
        problem = s["status"] in ("error", "reauth_required") or warning is not None
        attrs = {
            k: s.get(k)
            for k in (
                "status",
                "last_success",
                "last_error",
                "last_error_at",
                "next_run",
                "action_needed",
            )
        }
        attrs["warning"] = warning
        out[source_object_id(s["source"])] = ("ON" if problem else "OFF", attrs)
    return out


def messages(
    topics: Topics,
    slot: dict[str, Any] | None,
    rec: dict[str, Any] | None,
    status: dict[str, Any],
    no_window: dict[str, Any] | None = None,
    *,
    ask: bool = False,
    question: dict[str, Any] | None = None,
    said: dict[str, float] | None = None,
) -> Messages:
    """All retained messages for the current state (configs first, so entities exist);
    with `ask`, the question select too (the daemon's link, which listens for the answer).
    `said`: the check-in answers of the current slot, item -> value."""
    sources = source_states(status["sources"], status.get("warnings", []))
    found = {
        **meter_states(slot),
        **recommendation_states(rec, no_window),
        **sources,
        **checkin_states(said or {}),
    }
    enabled = [s["source"] for s in status["sources"] if s["enabled"]]
    entities = configs(topics, enabled)
    if ask:
        entities[QUESTION] = ("select", question_config(topics))
        found[QUESTION] = question_state(question)
    out = Messages()
    for object_id, (component, config) in entities.items():
        out.configs[topics.config(component, object_id)] = json.dumps(config, sort_keys=True)
        if object_id in found:
            state, attrs = found[object_id]
            out.states[topics.state(object_id)] = state
            out.states[topics.attributes(object_id)] = json.dumps(attrs, sort_keys=True)
    return out
