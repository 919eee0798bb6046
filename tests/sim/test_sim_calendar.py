"""Simulated calendars, and the bundled runner reading the calendar in its state."""

from __future__ import annotations

import numpy as np

from bridge.runner.bundled import BundledRunner, load_model
from bridge.runner.features import N_CTX, N_CTX_V1, context
from bridge.sim.calendar import SLOT_MINUTES, month
from bridge.sim.episode import observation, run_episode
from bridge.sim.evaluate import BLIND, Lineup, evaluate
from bridge.sim.population import person
from mappings.actions import ACTIONS
from mappings.free_windows import DEFAULT_MIN_MINUTES


def test_simulated_calendars_are_work_weeks_with_free_nights():
    cals = [month(seed, 28) for seed in range(1_000_000, 1_000_040)]
    assert month(1_000_000, 28) == cals[0]  # reproducible per person
    by = np.array([[c.free_minutes for c in cal] for cal in cals])  # (people, 28)
    slot_of = np.arange(28) % 4
    weekday = np.arange(28) // 4 < 5
    nights = by[:, slot_of == 3]
    assert (nights == SLOT_MINUTES[3]).all()  # nights are free: sleep always fits
    work = by[:, weekday & (slot_of < 2)]
    evenings = by[:, weekday & (slot_of == 2)]
    assert work.mean() < evenings.mean() - 40  # meetings fill working hours
    assert (work < DEFAULT_MIN_MINUTES["DEEP_WORK"]).any()  # some half-days are booked
    assert (evenings == SLOT_MINUTES[2]).mean() > 0.6  # evenings mostly free
    actives = {c.active_event for cal in cals for c in cal}
    assert {"ADMIN_WORK", "FAMILY_TIME", "EXERCISE", "LEARN", "SOCIALIZE", None} <= actives


def test_with_a_calendar_nothing_is_recommended_over_busy_time():
    p = person("in", 3)
    ep = run_episode(BundledRunner(), p, 60, calendar=True)
    assert len(ep.actions) == 60 and ep.errors == 0
    assert ep.overlaps == [False] * 60
    cals = ep.calendar
    # Every history item carries what the calendar showed; none is over busy time.
    for item in ep.history():
        assert item["free_minutes"] >= DEFAULT_MIN_MINUTES[item["action"]]
    assert sum(len(c.available()) == 0 for c in cals[: 60 + ep.skipped]) == ep.skipped


def test_an_ignore_in_a_booked_slot_says_less_than_one_in_a_free_slot():
    runner = BundledRunner()
    prior = runner.posterior([])

    def moved(free_minutes):
        item = {
            "day": 1,
            "slot": 0,
            "meters": {m: 0.6 for m in ("vitality", "cognition", "progress", "serenity")},
            "action": "DEEP_WORK",
            "response": "ignored",
            "meter_deltas": {},
            "free_minutes": free_minutes,
        }
        post = runner.posterior([item] * 3)
        return float(np.abs(post - prior).sum())

    assert moved(50) < 0.7 * moved(420)


def test_what_the_model_learned_about_booked_slots_and_scheduled_actions(rhythm_model):
    meters = np.full(5, 0.6)
    learn = np.array([ACTIONS.index("LEARN")])

    def logit(model, busy, scheduled):
        return float(
            model.accept_logits(learn, context(1, meters, busy, scheduled)[None])[:, 0].mean()
        )

    # The rhythm simulator's people welcome what their calendar already holds and refuse
    # more when booked; a model trained on them found both without being told.
    rhythm = load_model(rhythm_model)
    assert logit(rhythm, 0.0, True) > logit(rhythm, 0.0, False) + 0.5
    assert logit(rhythm, 0.8, False) < logit(rhythm, 0.0, False) - 1.0
    # The shipped model learned it from a mixture of families whose calendars weigh
    # differently: the same directions (a booked slot by at least half as much).
    mixed = load_model()
    assert logit(mixed, 0.0, True) > logit(mixed, 0.0, False) + 0.5
    assert logit(mixed, 0.8, False) < logit(mixed, 0.0, False) - 0.5
    runner = BundledRunner()
    obs = observation(5, meters)
    obs.update({"free_minutes": 120, "available_actions": ["ADMIN_WORK", "LEARN", "MEDITATE"]})
    for scheduled in (None, "LEARN"):
        rec = runner.recommend(dict(obs, active_event=scheduled), [])
        assert rec.action in obs["available_actions"]


def test_the_bundled_model_knows_the_calendar_and_older_models_still_load(tmp_path):
    model = load_model()
    assert model.accept_w.shape[2] == N_CTX
    assert np.abs(model.accept_w[:, :, N_CTX_V1:, :]).sum() > 0  # trained with calendars
    old = {k: np.asarray(v) for k, v in np.load(model_path(), allow_pickle=False).items()}
    old["accept_w"] = old["accept_w"][..., :N_CTX_V1, :]
    path = tmp_path / "v1.npz"
    np.savez(path, **old)
    runner = BundledRunner(model=str(path))
    rec = runner.recommend(observation(0, np.full(5, 0.5)), [])
    assert rec.action and runner.model.accept_w.shape[2] == N_CTX


def model_path():
    from bridge.runner.bundled import default_model_path

    return default_model_path()


def test_eval_with_calendars_reports_busy_time_and_the_comparison():
    report = evaluate(
        "in",
        3,
        0,
        lineup=Lineup(("random", "heuristic", "bundled", "oracle", BLIND)),
        slots=30,
        calendars=True,
    )
    assert report["calendars"] is True
    for name, r in report["runners"].items():
        assert r["busy_overlap_share"] == 0.0, name
        assert 0.0 <= r["booked_slots_skipped"] < 0.2
    assert set(report["bundled_without_calendars"]["acceptance"]) == {"1-8", "9-28", "29-112"}
    target = report["targets"][0]
    assert target["target"].startswith("bundled recommendations over busy time") and target["met"]
