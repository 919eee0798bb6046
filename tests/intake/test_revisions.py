"""Facts a source revises: a day that grows, a night re-scored or moved, counted once.

The bodies are Garmin's real recorded answers (../shared/fixtures/garmin/connect_api) and
WHOOP's documented examples, changed the way the services change them between pulls; the
records go through the real connectors and the real writer (bridge.intake.live.commit).
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from sqlalchemy import select

from bridge.intake.live import commit
from bridge.store import Store, upsert
from bridge.store.models import Reading
from connectors import garmin, whoop
from connectors.base import ReadContext
from connectors.live import PullResult
from mappings.frames import empty_events
from mappings.meters import compute_slots
from mappings.slots import SlotKey
from tests.shared import shared_path

GARMIN = shared_path("garmin", "connect_api")
LA = ZoneInfo("America/Los_Angeles")
BERLIN = ZoneInfo("Europe/Berlin")  # the summary sample's owner: UTC+2 in June


def _body(name: str) -> Any:
    return json.loads((GARMIN / name).read_text())


def _stamp(value: datetime) -> str:
    return value.replace(tzinfo=None).isoformat(timespec="seconds") + ".0"


def _rows(store: Store, source: str = "garmin", metric: str | None = None) -> list[Reading]:
    with store.session() as session:
        stmt = select(Reading).where(Reading.source == source)
        if metric:
            stmt = stmt.where(Reading.metric == metric)
        return list(session.execute(stmt.order_by(Reading.start_utc, Reading.label)).scalars())


def _pull(store: Store, records: list, now: datetime, source: str = "garmin") -> Any:
    return commit(store, source, PullResult(records=records), now)


def _day_so_far(synced: datetime, steps: int, stress: int) -> dict[str, Any]:
    """The real 2025-06-14 summary as Garmin answers it when the watch last synced then."""
    day = _body("usersummary-service_daily_2025-06-14.json")
    day.update(
        wellnessEndTimeGmt=_stamp(synced.astimezone(UTC)),
        wellnessEndTimeLocal=_stamp(synced.astimezone(BERLIN)),
        totalSteps=steps,
        averageStressLevel=stress,
    )
    return day


SYNCS = [  # (last upload, steps so far, average stress so far) of 2025-06-14, Berlin
    (datetime(2025, 6, 14, 8, 10, tzinfo=BERLIN), 610, 18),
    (datetime(2025, 6, 14, 11, 40, tzinfo=BERLIN), 2204, 21),
    (datetime(2025, 6, 14, 15, 5, tzinfo=BERLIN), 3377, 26),
    (datetime(2025, 6, 14, 19, 30, tzinfo=BERLIN), 4890, 25),
    (datetime(2025, 6, 15, 0, 0, tzinfo=BERLIN), 5459, 24),  # the day is over
]


def test_a_growing_day_pulled_five_times_is_one_row_per_fact_at_its_latest_value(store):
    for i, (synced, steps, stress) in enumerate(SYNCS):
        summary = _pull(
            store, garmin.summary_records(_day_so_far(synced, steps, stress), BERLIN), synced
        )
        # Every pull after the first replaces the day's total and average, never adds.
        assert summary.replaced == (2 if i else 0)
        (row,) = _rows(store, metric="steps")
        assert (row.value, row.end_utc) == (steps, synced.astimezone(UTC))
        (avg,) = _rows(store, metric="stress")
        assert (avg.value, avg.end_utc) == (stress, synced.astimezone(UTC))
    metrics = sorted((r.metric, r.label) for r in _rows(store))
    assert metrics == [
        ("body_battery", "at_wake"),
        ("body_battery", "highest"),
        ("body_battery", "lowest"),
        ("resting_hr", ""),
        ("steps", ""),
        ("stress", "day_avg"),
    ]
    assert {r.revision for r in _rows(store)} == {"day:2025-06-14"}


def test_the_meters_read_a_grown_day_once_as_steps_so_far(store):
    synced, steps, stress = SYNCS[2]
    for moment in SYNCS[:3]:
        _pull(store, garmin.summary_records(_day_so_far(*moment), BERLIN), moment[0])
    frame = _frame(store)
    (res,) = compute_slots(
        frame, empty_events(), [SlotKey(date(2025, 6, 14), 1)], tz=BERLIN, now=synced
    )
    inputs = {i["name"]: i for i in res.meters["vitality"].provenance["inputs"]}
    assert inputs["steps"]["value"] == steps  # not 610 + 2204 + 3377
    serenity = {i["name"]: i for i in res.meters["serenity"].provenance["inputs"]}
    assert serenity["stress"]["value"] == stress  # the latest average only


def _frame(store: Store):
    import pandas as pd

    from mappings.frames import READING_COLUMNS

    rows = [
        (r.metric, r.start_utc, r.end_utc, r.value, r.label, r.origin, r.utc_offset_min)
        for r in _rows(store)
    ]
    frame = pd.DataFrame(rows, columns=READING_COLUMNS)
    for col in ("start_utc", "end_utc"):
        frame[col] = pd.to_datetime(frame[col], utc=True)
    return frame


def test_body_battery_at_wake_is_dated_at_the_wake_up_and_counts_for_that_day(store):
    # The real summary's SLEEP event: 20:57:15 GMT the evening before, 32,580 s long.
    day = _body("usersummary-service_daily_2025-06-14.json")
    records = garmin.summary_records(day, BERLIN)
    (wake,) = [r for r in records if r.label == "at_wake"]
    assert wake.start == datetime(2025, 6, 14, 6, 0, 15, tzinfo=UTC)
    assert wake.value == day["bodyBatteryAtWakeTime"] == 92
    _pull(store, records, datetime(2025, 6, 15, tzinfo=BERLIN))
    keys = [SlotKey(date(2025, 6, 14), slot) for slot in range(4)]
    results = compute_slots(
        _frame(store), empty_events(), keys, tz=BERLIN, now=datetime(2025, 6, 15, tzinfo=BERLIN)
    )
    for res in results:
        vitality = res.meters["vitality"].provenance
        used = {i["name"]: i for i in vitality["inputs"]}
        # Only the value at wake speaks (highest/lowest so far have no moment): 92.
        assert used["body_battery"]["value"] == 92, res.key
        assert "body_battery" not in vitality.get("missing", [])


def _night(deep: int, light: int, rem: int, awake: int, earlier_min: int = 0) -> dict[str, Any]:
    doc = _body("wellness-service_dailySleepData_2021-07-20.json")
    dto = doc["dailySleepDTO"]
    shift = earlier_min * 60_000
    dto["sleepStartTimestampGMT"] -= shift
    dto["sleepStartTimestampLocal"] -= shift
    dto.update(
        deepSleepSeconds=deep, lightSleepSeconds=light, remSleepSeconds=rem, awakeSleepSeconds=awake
    )
    return doc


def _assert_one_night(store: Store, source: str, stage_minutes: dict[str, float]) -> None:
    sleep = _rows(store, source, "sleep")
    (bed,) = [r for r in sleep if r.label == "in_bed"]
    stages = sorted((r for r in sleep if r.label != "in_bed"), key=lambda r: r.start_utc)
    assert {r.label: r.value for r in stages} == pytest.approx(stage_minutes)
    # Laid back to back from sleep start, inside the night: nothing left of an old version.
    assert stages[0].start_utc == bed.start_utc
    assert all(a.end_utc == b.start_utc for a, b in itertools.pairwise(stages))
    covered = sum((r.end_utc - r.start_utc).total_seconds() for r in stages) / 60
    assert covered <= (bed.end_utc - bed.start_utc).total_seconds() / 60 + 1e-6


def test_a_rescored_night_and_an_edited_sleep_window_keep_only_the_latest_version(store):
    real = _body("wellness-service_dailySleepData_2021-07-20.json")["dailySleepDTO"]
    first = _night(
        real["deepSleepSeconds"], real["lightSleepSeconds"], real["remSleepSeconds"], 1800
    )
    tz = ZoneInfo("America/Denver")  # the sample's owner (Local - GMT = -5 h in July)
    now = datetime(2021, 7, 20, 12, tzinfo=tz)
    _pull(store, garmin.sleep_records(first, tz), now)
    _assert_one_night(store, "garmin", {"deep": 74, "core": 312, "rem": 43, "awake": 30})
    # Re-scored: new stage totals for the same window.
    _pull(store, garmin.sleep_records(_night(6000, 16200, 3300, 1200), tz), now)
    _assert_one_night(store, "garmin", {"deep": 100, "core": 270, "rem": 55, "awake": 20})
    # The person moves their bedtime 25 minutes earlier: a new start for every row.
    summary = _pull(store, garmin.sleep_records(_night(6000, 17700, 3300, 1200, 25), tz), now)
    # In-bed, breathing rate, deep and core moved; REM and awake end where they did.
    assert summary.replaced == 4
    _assert_one_night(store, "garmin", {"deep": 100, "core": 295, "rem": 55, "awake": 20})
    assert len(_rows(store, "garmin", "respiratory_rate")) == 1


def _whoop_sleep(light_min: int, end_shift_min: int = 0) -> dict[str, Any]:
    from tests.connectors.live.whoop_fakes import record_example

    raw = copy.deepcopy(record_example("/v2/activity/sleep"))
    end = datetime.fromisoformat(raw["end"].replace("Z", "+00:00"))
    raw["end"] = (end + timedelta(minutes=end_shift_min)).isoformat().replace("+00:00", "Z")
    raw["score"]["stage_summary"]["total_light_sleep_time_milli"] = light_min * 60_000
    return raw


def test_whoop_rescored_and_edited_sleep_and_its_recovery_are_replaced_by_id(store):
    from tests.connectors.live.whoop_fakes import record_example

    now = datetime(2026, 11, 20, tzinfo=UTC)
    recovery = {**record_example("/v2/recovery"), "score_state": "SCORED"}
    for light, shift in ((200, 0), (230, 0), (230, 15)):
        raw = _whoop_sleep(light, shift)
        wake = {str(raw["id"]): datetime.fromisoformat(raw["end"].replace("Z", "+00:00"))}
        recovery["sleep_id"] = raw["id"]
        records = whoop.sleep_records(raw) + whoop.recovery_records(recovery, wake)
        _pull(store, records, now, source="whoop")
    sleep = _rows(store, "whoop", "sleep")
    assert [r.value for r in sleep if r.label == "core"] == [230]
    assert len([r for r in sleep if r.label == "in_bed"]) == 1
    (rec,) = _rows(store, "whoop", "recovery")
    assert rec.start_utc == wake[str(raw["id"])]  # at the edited wake-up, once


def test_rows_stored_before_revision_keys_are_replaced_by_the_next_pull(store):
    """A store the earlier release wrote: rows without a key, versions side by side."""
    before = datetime(2025, 6, 14, 0, 0, tzinfo=BERLIN)
    day = _body("usersummary-service_daily_2025-06-14.json")
    day.update(  # the day before, over: another fact, must stay
        calendarDate="2025-06-13",
        wellnessStartTimeGmt="2025-06-12T22:00:00.0",
        wellnessStartTimeLocal="2025-06-13T00:00:00.0",
        wellnessEndTimeGmt="2025-06-13T22:00:00.0",
        wellnessEndTimeLocal="2025-06-14T00:00:00.0",
        totalSteps=9000,
        bodyBatteryActivityEventList=[],
    )
    old = garmin.summary_records(day, BERLIN)
    old += garmin.summary_records(_day_so_far(*SYNCS[0]), BERLIN)
    old += garmin.summary_records(_day_so_far(*SYNCS[1]), BERLIN)
    rows = [r.row("garmin", before) | {"revision": ""} for r in old]
    with store.transaction() as session:
        upsert(
            session,
            Reading,
            rows,
            keys=("source", "metric", "origin", "start_utc", "end_utc", "label"),
        )
    assert len(_rows(store, metric="steps")) == 3
    _pull(store, garmin.summary_records(_day_so_far(*SYNCS[2]), BERLIN), SYNCS[2][0])
    steps = _rows(store, metric="steps")
    assert [(r.value, r.revision) for r in steps] == [(9000, ""), (3377, "day:2025-06-14")]


# --- offsets across a daylight-saving change -------------------------------------------------


def test_each_row_takes_the_offset_at_its_own_instant_across_a_dst_change(store):
    """2026-11-01 in Los Angeles: 01:59 PDT (-7 h) is followed by 01:00 PST (-8 h)."""
    doc = _body("wellness-service_dailyHeartRate_2026-01-07.json")
    start, end = datetime(2026, 11, 1, 7, tzinfo=UTC), datetime(2026, 11, 2, 8, tzinfo=UTC)
    doc.update(
        calendarDate="2026-11-01",
        startTimestampGMT=_stamp(start),
        endTimestampGMT=_stamp(end),
        startTimestampLocal="2026-11-01T00:00:00.0",
        endTimestampLocal="2026-11-02T00:00:00.0",
        heartRateValues=[
            [int((start + timedelta(minutes=2 * i)).timestamp() * 1000), 60 + i % 30]
            for i in range(int((end - start).total_seconds() // 120))
        ],
    )
    change = datetime(2026, 11, 1, 9, tzinfo=UTC)
    _pull(store, garmin.heart_rate_records(doc, LA), datetime(2026, 11, 2, 12, tzinfo=UTC))
    rows = _rows(store, metric="heart_rate")
    assert len(rows) == 750
    assert {r.utc_offset_min for r in rows if r.start_utc < change} == {-420}
    assert {r.utc_offset_min for r in rows if r.start_utc >= change} == {-480}
    assert sum(r.start_utc < change for r in rows) == 60

    # The night into the change: in bed at 23:00 PDT, up at 07:00 PST.
    night = _night(5400, 16200, 5400, 1800)
    dto = night["dailySleepDTO"]
    bed, up = datetime(2026, 11, 1, 6, tzinfo=UTC), datetime(2026, 11, 1, 15, tzinfo=UTC)
    dto.update(
        calendarDate="2026-11-01",
        sleepStartTimestampGMT=int(bed.timestamp() * 1000),
        sleepEndTimestampGMT=int(up.timestamp() * 1000),
        sleepStartTimestampLocal=int((bed - timedelta(hours=7)).timestamp() * 1000),
        sleepEndTimestampLocal=int((up - timedelta(hours=8)).timestamp() * 1000),
    )
    records = garmin.sleep_records(night, LA)
    offsets = {(r.label or r.metric): r.start.utcoffset() for r in records}
    assert offsets["in_bed"] == offsets["deep"] == timedelta(hours=-7)  # from 23:00 PDT
    assert offsets["core"] == timedelta(hours=-7)  # from 00:30 PDT
    assert offsets["rem"] == timedelta(hours=-8)  # 270 minutes later: 04:00 PST
    (bed_row,) = [r for r in records if r.label == "in_bed"]
    assert bed_row.end.utcoffset() == timedelta(hours=-8)  # the wake-up

    # The summary of that day: its total starts at midnight PDT.
    day = _body("usersummary-service_daily_2025-06-14.json")
    day.update(
        calendarDate="2026-11-01",
        wellnessStartTimeGmt=_stamp(start),
        wellnessStartTimeLocal="2026-11-01T00:00:00.0",
        wellnessEndTimeGmt=_stamp(datetime(2026, 11, 1, 20, tzinfo=UTC)),
        wellnessEndTimeLocal="2026-11-01T12:00:00.0",
        bodyBatteryActivityEventList=[],
    )
    by = {r.metric: r for r in garmin.summary_records(day, LA)}
    assert by["steps"].start.utcoffset() == timedelta(hours=-7)
    assert by["steps"].end.utcoffset() == timedelta(hours=-8)


def test_without_the_persons_zone_a_day_keeps_the_offset_garmin_gives_it():
    """Travelling (the configured zone disagrees with Garmin's pairs): the pairs win."""
    doc = _body("wellness-service_dailyHeartRate_2026-01-07.json")
    rows = garmin.heart_rate_records(doc, BERLIN)
    assert {r.start.utcoffset() for r in rows} == {timedelta(hours=-6)}


# --- the migration repairing a store written before ---------------------------------------


def _old_schema_store(database_url: str) -> sa.Engine:
    from alembic import command
    from alembic.script import ScriptDirectory

    from bridge.store.db import _alembic_config, make_engine

    engine = make_engine(database_url)
    cfg = _alembic_config(engine)
    before = ScriptDirectory.from_config(cfg).get_revision("i26_revisions").down_revision
    command.upgrade(cfg, before)
    return engine


def test_the_migration_keeps_the_latest_version_of_rows_stored_twice(database_url, caplog):
    from bridge.store.db import migrate

    engine = _old_schema_store(database_url)
    old = sa.Table(
        "readings",
        sa.MetaData(),
        *(
            sa.Column(c.name, c.type, primary_key=c.primary_key)
            for c in Reading.__table__.columns
            if c.name != "revision"
        ),
    )
    tz = ZoneInfo("America/Denver")
    stamp = datetime(2026, 11, 1, tzinfo=UTC)
    records = []
    for moment in SYNCS[:4]:  # what the earlier release stored: a row per sync
        records += garmin.summary_records(_day_so_far(*moment), BERLIN)
    real = _body("wellness-service_dailySleepData_2021-07-20.json")["dailySleepDTO"]
    records += garmin.sleep_records(
        _night(real["deepSleepSeconds"], real["lightSleepSeconds"], real["remSleepSeconds"], 1800),
        tz,
    )
    records += garmin.sleep_records(_night(6000, 16200, 3300, 1200), tz)  # re-scored
    latest = garmin.sleep_records(_night(6000, 17700, 3300, 1200, 25), tz)  # edited
    records += latest
    rows: dict[tuple, dict] = {}
    for rec in records:  # the old natural key: a repeat updated the row in place
        row = rec.row("garmin", stamp)
        row.pop("revision")
        rows[tuple(row[k] for k in ("metric", "origin", "start_utc", "end_utc", "label"))] = row
    # Apple samples starting together are separate samples: never touched.
    apple = {
        "source": "apple_health",
        "metric": "steps",
        "origin": "iPhone",
        "label": "",
        "start_utc": stamp,
        "utc_offset_min": 0,
        "value": 10.0,
        "unit": "count",
        "device": "",
        "imported_at": stamp,
    }
    with engine.begin() as conn:
        conn.execute(old.insert(), list(rows.values()))
        conn.execute(
            old.insert(),
            [apple | {"end_utc": stamp + timedelta(minutes=m)} for m in (1, 2)],
        )
    with caplog.at_level(logging.WARNING, logger="rhythm_bridge.store"):
        migrate(engine)
    engine.dispose()
    repaired = [r for r in caplog.records if "store repaired" in r.getMessage()]
    assert len(repaired) == 1
    # 3 older steps + 3 older stress rows; the night: 2 older in-bed spans, 1 breathing rate
    # (the re-score kept its window), and the stages of both older layouts not in the latest.
    store = Store(database_url, create=False)
    try:
        (steps,) = _rows(store, metric="steps")
        assert steps.value == SYNCS[3][1]
        (stress,) = _rows(store, metric="stress")
        assert stress.value == SYNCS[3][2]
        _assert_one_night(store, "garmin", {"deep": 100, "core": 295, "rem": 55, "awake": 20})
        assert len(_rows(store, "garmin", "respiratory_rate")) == 1
        assert len(_rows(store, "apple_health")) == 2
        deleted = len(rows) + 2 - sum(1 for _ in _rows(store)) - len(_rows(store, "apple_health"))
        assert f"{deleted} readings" in repaired[0].getMessage()
        # The repaired store takes the next pull as one more version, not a new row.
        _pull(store, latest, datetime(2021, 7, 20, 12, tzinfo=tz))
        _assert_one_night(store, "garmin", {"deep": 100, "core": 295, "rem": 55, "awake": 20})
    finally:
        store.dispose()


# --- the services' world pulled at several moments of a day vs once at its end ----------------


@pytest.fixture(scope="module")
def world_api():
    from tests.fake_apis import FakeAPIs

    with FakeAPIs(now=datetime(2026, 10, 25, tzinfo=UTC)) as fake:
        fake.whoop_access.add("whoop-access-revisions")
        yield fake


def _world_settings(tmp_path, fake) -> Any:
    import time

    from bridge.auth.secrets import Secrets
    from bridge.config import Settings
    from tests.fake_apis import garmin_jwt, provider_settings

    sources = provider_settings(fake.url)
    settings = Settings.model_validate(
        {
            "timezone": "Europe/Berlin",
            "data_dir": str(tmp_path / "data"),
            "secrets": {"backend": "file"},
            "sources": {"whoop": sources["whoop"], "garmin": sources["garmin"]},
        }
    )
    settings.data_path.mkdir(parents=True, exist_ok=True)
    secrets = Secrets.from_settings(settings)
    secrets.set(whoop.CLIENT_SECRET, "whoop-client-secret")
    token = {
        "access_token": "whoop-access-revisions",
        "refresh_token": "unused",
        "expires_at": time.time() + 7 * 86400,
    }
    secrets.set_json(whoop.TOKEN_SECRET, token)
    secrets.set(garmin.KEY_SECRET, "garmin-personal-api-key")
    # A bearer token valid by the real clock too (the world's clock is in the past).
    exp = time.time() + 7 * 86400
    secrets.set_json(garmin.TOKEN_SECRET, {"access_token": garmin_jwt(exp), "expires_at": exp})
    return settings


def _facts(store: Store, since: datetime) -> set[tuple]:
    """Every reading from `since` on (a stream empty in a backfill's window has no cursor,
    so its next pull reaches further back than the backfill did: more, not different)."""
    with store.session() as session:
        rows = session.execute(
            select(
                Reading.source,
                Reading.metric,
                Reading.origin,
                Reading.label,
                Reading.start_utc,
                Reading.end_utc,
                Reading.value,
                Reading.utc_offset_min,
            ).where(Reading.start_utc >= since)
        ).all()
    return {
        (*r[:4], r[4].astimezone(UTC).isoformat(), r[5].astimezone(UTC).isoformat(), r[6], r[7])
        for r in rows
    }


def _sync(store: Store, settings: Any, fake: Any, at: datetime, since: datetime | None) -> None:
    from bridge.intake.sources import run_source
    from connectors.base import ReadContext

    fake.fixed_now = at
    ctx = ReadContext(tz=BERLIN, now=at)
    for name in ("garmin", "whoop"):
        outcome = run_source(store, settings, name, ctx, since=since)
        assert outcome.error is None, outcome.error


DAYS = [date(2026, 10, 25), date(2026, 11, 4), date(2026, 11, 18)]  # the first: DST ends


def test_a_day_pulled_at_several_moments_ends_with_the_rows_of_one_pull_at_its_end(
    tmp_path, world_api, store, monkeypatch
):
    """Growing days, late uploads, re-scored and edited nights: however often a day is
    pulled, the store ends with exactly what one pull at the end gives."""
    from hypothesis import HealthCheck, Phase, given
    from hypothesis import settings as hsettings
    from hypothesis import strategies as st

    from bridge.auth.secrets import KEY_ENV

    monkeypatch.setenv(KEY_ENV, "test-only-keyring-key")
    waits: list[float] = []
    monkeypatch.setattr("connectors.http.sleep", waits.append)  # pacing: no real waiting
    config = _world_settings(tmp_path, world_api)
    truth_cache: dict[date, set[tuple]] = {}

    @hsettings(
        max_examples=6,
        deadline=None,
        # Each example is a dozen real pulls: report the failing one, do not shrink for minutes.
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        day=st.sampled_from(DAYS),
        minutes=st.lists(st.integers(0, 24 * 60 - 31), min_size=1, max_size=5, unique=True),
    )
    def check(day: date, minutes: list[int]) -> None:
        since = datetime(day.year, day.month, day.day, tzinfo=BERLIN) - timedelta(days=3)
        end = datetime(day.year, day.month, day.day, 23, 30, tzinfo=BERLIN)
        if day not in truth_cache:
            fresh = Store(f"sqlite:///{tmp_path / f'fresh-{day}.db'}")
            try:
                _sync(fresh, config, world_api, end, since)
                truth_cache[day] = _facts(fresh, since)
            finally:
                fresh.dispose()
        with store.transaction() as session:
            session.execute(sa.delete(Reading))
            from bridge.store.models import SyncState

            session.execute(sa.delete(SyncState))
        midnight = datetime(day.year, day.month, day.day, tzinfo=BERLIN).astimezone(UTC)
        first = True
        for minute in sorted(minutes):
            at = (midnight + timedelta(minutes=minute)).astimezone(BERLIN)
            _sync(store, config, world_api, at, since if first else None)
            first = False
        _sync(store, config, world_api, end, None)
        got = _facts(store, since)
        truth = truth_cache[day]
        assert got == truth, (sorted(got - truth)[:5], sorted(truth - got)[:5])

    check()


def test_an_apple_night_pushed_again_with_other_totals_replaces_the_first(store):
    """Health Auto Export re-sends a summarised night as the watch syncs more of it."""
    import io

    from connectors.health_auto_export import PushStats, read_stream

    body = json.loads(shared_path("health_auto_export", "v6_sleep_summary_phases.json").read_text())
    now = datetime(2023, 1, 31, 12, tzinfo=UTC)
    ctx = ReadContext(tz=ZoneInfo("Asia/Shanghai"), now=now, past_days=100_000)
    item = body["data"]["metrics"][0]["data"][0]
    for deep, core in ((0.5, 3.0), (0.8583333333333334, 3.2999999999999994)):
        item.update(deep=deep, core=core)
        data = io.BytesIO(json.dumps(body).encode())
        records = list(read_stream(data, ctx, stats=PushStats()))
        _pull(store, records, now, source="apple_push")
    sleep = _rows(store, "apple_push", "sleep")
    assert {r.label: round(r.value, 1) for r in sleep if r.label != "in_bed"} == {
        "deep": 51.5,
        "core": 198.0,
        "rem": 75.5,
        "awake": 7.0,
    }
    assert len(sleep) == 5
