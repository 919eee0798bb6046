"""One simulated person living 4 weeks (112 slots) with a runner recommending each slot."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.runner.features import booked
from bridge.sim.calendar import SlotCalendar, month
from bridge.sim.world import CRASH, Person, accept_probability, initial_meters, step
from mappings.actions import ACTIONS, METERS

SLOTS_PER_EPISODE = 112


@dataclass
class Episode:
    person: Person
    actions: list[str] = field(default_factory=list)
    accepted: list[bool] = field(default_factory=list)
    beliefs: list[list[float] | None] = field(default_factory=list)
    crashed: list[bool] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    meters: list[list[float]] = field(default_factory=list)
    errors: int = 0
    final_belief: list[float] | None = None
    start: list[float] = field(default_factory=list)
    calendar: list[SlotCalendar] | None = None
    overlaps: list[bool] = field(default_factory=list)  # recommended with no window for it
    skipped: int = 0  # slots with no window for any action: no recommendation made
    items: list[dict[str, Any]] = field(default_factory=list)

    def history(self) -> list[dict[str, Any]]:
        """The episode as the runner-shaped interaction history it produced."""
        return list(self.items)


def calendar_fields(cal: SlotCalendar | None) -> dict[str, Any]:
    """What the pipeline puts in an observation from the calendar (nothing without one)."""
    if cal is None:
        return {}
    return {
        "free_minutes": cal.free_minutes,
        "available_actions": cal.available(),
        "active_event": cal.active_event,
    }


def observation(t: int, meters: np.ndarray, cal: SlotCalendar | None = None) -> dict[str, Any]:
    """The runner's observation at slot t, in the shape the pipeline builds."""
    obs: dict[str, Any] = {
        "timestep": t % 28,
        "day": (t // 4) % 7,
        "slot": t % 4,
        "remaining_steps": 27 - t % 28,
    }
    obs.update({m: round(float(x), 4) for m, x in zip(METERS, meters, strict=True)})
    obs.update(calendar_fields(cal))
    return obs


def history_item(
    t: int,
    meters: np.ndarray,
    action: str,
    accepted: bool,
    after: np.ndarray,
    cal: SlotCalendar | None = None,
) -> dict[str, Any]:
    item = {
        "day": (t // 4) % 7,
        "slot": t % 4,
        "meters": {m: round(float(x), 4) for m, x in zip(METERS, meters, strict=True)},
        "action": action,
        "response": "accepted" if accepted else "ignored",
        "meter_deltas": {
            m: round(float(b - a), 4) for m, a, b in zip(METERS, meters, after, strict=True)
        },
    }
    if cal is not None:
        item["free_minutes"] = cal.free_minutes
        item["active_event"] = cal.active_event
    return item


def run_episode(
    runner: Any,
    person: Person,
    slots: int = SLOTS_PER_EPISODE,
    *,
    fallback: str = "ME_TIME",
    calendar: bool = False,
) -> Episode:
    """Let `runner` recommend every slot; the person answers and the meters move.

    With `calendar`, the person has a simulated calendar (bridge.sim.calendar): the runner
    sees it as the pipeline shows a real one, and the person cannot do what does not fit.

    The person's random draws depend only on the person, so every runner meets the same
    luck (common random numbers). A runner that raises counts as an error and the slot
    gets `fallback`, so one bad answer does not end the episode.
    """
    answers = np.random.default_rng([person.seed, 1])
    noise = np.random.default_rng([person.seed, 2])
    meters = initial_meters(np.random.default_rng([person.seed, 0]))
    # A slot with no room for any action gets no recommendation (the pipeline moves on to
    # the next slot with a window), so a month of calendar covers `slots` interactions.
    cals = month(person.seed, 3 * slots + 10) if calendar else None
    ep = Episode(person, start=meters.tolist(), calendar=cals)
    history = ep.items
    t = -1
    while len(ep.actions) < slots:
        t += 1
        cal = cals[t] if cals else None
        if cal is not None and not cal.available():
            meters = step(person, meters, t % 4, 0, False, noise)  # the habit fills it
            ep.skipped += 1
            continue
        obs = observation(t, meters, cal)
        started = time.perf_counter()
        try:
            rec = runner.recommend(obs, history)
            action, belief = rec.action, rec.belief
        except Exception:
            ep.errors += 1
            action, belief = fallback, None
        ep.latencies.append(time.perf_counter() - started)
        a = ACTIONS.index(action)
        if cal is None:
            p = accept_probability(person, t % 4, meters)
        else:
            p = accept_probability(
                person,
                t % 4,
                meters,
                booked(cal.free_minutes),
                ACTIONS.index(cal.active_event) if cal.active_event else None,
                np.array([cal.fits(x) for x in ACTIONS]),
            )
            ep.overlaps.append(not cal.fits(action))
        accepted = bool(answers.random() < p[a])
        after = step(person, meters, t % 4, a, accepted, noise)
        history.append(history_item(t, meters, action, accepted, after, cal))
        ep.actions.append(action)
        ep.accepted.append(accepted)
        ep.beliefs.append(list(belief) if belief is not None else None)
        ep.crashed.append(bool((after < CRASH).any()))
        ep.meters.append(after.tolist())
        meters = after
    try:  # the belief after the last answer, for "MAE after 112 interactions"
        t = next(i for i in range(t + 1, t + 9) if cals is None or cals[i].available())
        last = runner.recommend(observation(t, meters, cals[t] if cals else None), history).belief
        ep.final_belief = list(last) if last is not None else None
    except Exception:
        ep.errors += 1
    return ep
