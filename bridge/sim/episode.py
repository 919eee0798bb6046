"""One simulated person living 4 weeks (112 slots) with a runner recommending each slot."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.sim.calendar import SlotCalendar
from bridge.sim.family import SimPerson
from bridge.sim.world import CRASH, Person
from mappings.actions import ACTIONS, METERS

SLOTS_PER_EPISODE = 112


@dataclass
class Episode:
    person: SimPerson
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
    truths: list[list[float]] = field(default_factory=list)  # the profile at each interaction
    final_truth: list[float] | None = None
    expected: list[float | None] = field(default_factory=list)  # the runner's P(accept)
    sds: list[list[float] | None] = field(default_factory=list)  # the belief's posterior sd
    late: int = 0  # answers that reached the runner after the next recommendation
    unanswered: int = 0  # answers that never came ("expired")

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
    *,
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


def as_sim_person(person: Person | SimPerson, calendar: bool = False) -> SimPerson:
    """A bridge.sim.world Person as the rhythm family's SimPerson; any SimPerson as is."""
    if isinstance(person, Person):
        from bridge.sim.families.rhythm import RhythmPerson

        return RhythmPerson(person, calendars=calendar)
    return person


def run_episode(
    runner: Any,
    person: Person | SimPerson,
    slots: int = SLOTS_PER_EPISODE,
    *,
    fallback: str = "ME_TIME",
    calendar: bool = False,
) -> Episode:
    """Let `runner` recommend every slot; the person answers and the meters move.

    `person` is any family's SimPerson, or a bridge.sim.world Person (the rhythm family;
    with `calendar` it lives with a simulated calendar). The runner sees the calendar as
    the pipeline shows a real one, and the person cannot do what does not fit.

    Answers: one that comes late leaves its history item's `response` None until it
    arrives (as in the pipeline, where a recommendation has no feedback row yet); one
    that never comes is "expired" from the next recommendation on, which is what the
    pipeline stores when a slot ends unanswered. The meters always show what happened.

    The person's random draws depend only on the person, so every runner meets the same
    luck (common random numbers). A runner that raises counts as an error and the slot
    gets `fallback`, so one bad answer does not end the episode. A runner with a
    `see_slot(person, t, cal)` method (the oracle) is told the true slot first.
    """
    sim = as_sim_person(person, calendar)
    answers = np.random.default_rng([sim.seed, 1])
    noise = np.random.default_rng([sim.seed, 2])
    meters = sim.start()
    ep = Episode(sim, start=meters.tolist())
    has_calendar = sim.calendar(0) is not None
    if has_calendar:
        ep.calendar = []
    history = ep.items
    pending: list[tuple[int, int, bool]] = []  # (slot it arrives, history index, accepted)
    see = getattr(runner, "see_slot", None)
    t = -1
    while len(ep.actions) < slots:
        t += 1
        cal = sim.calendar(t)
        if ep.calendar is not None and cal is not None:
            ep.calendar.append(cal)
        _deliver(history, pending, t)
        # A slot with no room for any action gets no recommendation (the pipeline moves on to
        # the next slot with a window), so a month of calendar covers `slots` interactions.
        if cal is not None and not cal.available():
            meters = sim.advance(t, meters, 0, False, noise)  # the habit fills it
            ep.skipped += 1
            continue
        obs = observation(t, meters, cal)
        if see is not None:
            see(sim, t, cal)
        started = time.perf_counter()
        try:
            rec = runner.recommend(obs, history)
            action, belief = rec.action, rec.belief
            expected = rec.extra.get("expected_accept")
            sd = rec.extra.get("belief_sd")
        except Exception:
            ep.errors += 1
            action, belief, expected, sd = fallback, None, None, None
        ep.latencies.append(time.perf_counter() - started)
        a = ACTIONS.index(action)
        if cal is not None:
            ep.overlaps.append(not cal.fits(action))
        ans = sim.answer(t, a, meters, cal, answers)
        accepted = ans.accepted
        after = sim.advance(t, meters, a, accepted, noise)
        item = history_item(t, meters, action, accepted, after, cal=cal)
        if ans.delay is None:
            item["response"] = "expired"
            ep.unanswered += 1
        elif ans.delay > 0:
            item["response"] = None
            pending.append((t + ans.delay, len(history), accepted))
            ep.late += 1
        history.append(item)
        ep.actions.append(action)
        ep.accepted.append(accepted)
        ep.beliefs.append(list(belief) if belief is not None else None)
        ep.truths.append(sim.profile(t).tolist())
        ep.expected.append(None if expected is None else float(expected))
        ep.sds.append(None if sd is None else list(sd))
        ep.crashed.append(bool((after < CRASH).any()))
        ep.meters.append(after.tolist())
        meters = after
    try:  # the belief after the last answer, for "MAE after 112 interactions"
        for _ in range(8):
            t += 1
            cal = sim.calendar(t)
            if cal is None or cal.available():
                break
        _deliver(history, pending, t)
        if see is not None:
            see(sim, t, cal)
        last = runner.recommend(observation(t, meters, cal), history).belief
        ep.final_belief = list(last) if last is not None else None
        ep.final_truth = sim.profile(t).tolist()
    except Exception:
        ep.errors += 1
    return ep


def _deliver(history: list[dict[str, Any]], pending: list[tuple[int, int, bool]], t: int) -> None:
    """Fill in the answers that have reached the runner by slot t."""
    for due, index, accepted in [p for p in pending if p[0] <= t]:
        history[index]["response"] = "accepted" if accepted else "ignored"
        pending.remove((due, index, accepted))
