"""Apple data pushed by the phone (Health Auto Export, a Shortcut): the parsers on recorded
payloads, the endpoint on a real server on 127.0.0.1, and how pushes meet export imports."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from bridge.config import Settings
from bridge.errors import InputError
from bridge.intake.push import create_token, receive, revoke_token
from bridge.store import Store
from bridge.store.models import MeterSnapshot, Reading, SyncState
from bridge.web.server import BackgroundServer
from connectors.health_auto_export import PushStats, parse_date, read_stream
from connectors.shortcut import read_stream as read_shortcut
from tests.conftest import BERLIN, FIXTURES
from tests.shared import shared_path


def hae(name: str) -> Path:
    """Our own constructed day is kept here; the app's recorded bodies are read from ../shared/."""
    own = FIXTURES / "health_auto_export" / name
    return own if own.exists() else shared_path("health_auto_export", name)


def records(name: str, ctx: Any) -> list[Any]:
    with open(hae(name), "rb") as body:
        return list(read_stream(body, ctx, stats=PushStats()))


def payload(name: str, units: str, items: list[Any]) -> dict[str, Any]:
    """A Health Auto Export body with one metric."""
    return {"data": {"metrics": [{"name": name, "units": units, "data": items}]}}


def by_metric(recs: list[Any], metric: str) -> list[Any]:
    return [r for r in recs if getattr(r, "metric", None) == metric]


# --- the parsers, on recorded payloads --------------------------------------------------


def test_recorded_minute_energy_in_kj_becomes_kcal_buckets(ctx):
    recs = records("v1_metrics_active_energy_kj.json", ctx)
    energy = by_metric(recs, "active_energy")
    assert [round(r.value, 4) for r in energy] == [round(0.76856774374845116 / 4.184, 4), 0.0903]
    assert all(r.unit == "kcal" and r.end - r.start == timedelta(minutes=1) for r in energy)
    assert energy[0].start == datetime(
        2021, 12, 24, 0, 4, tzinfo=parse_date("2021-12-24 00:00:00 +0800").tzinfo
    )
    assert len(recs) == 2  # the empty basal_body_temperature adds nothing


def test_recorded_sleep_in_all_three_shapes(ctx):
    stages = by_metric(records("v1_sleep_stages.json", ctx), "sleep")
    assert [(r.label, r.value) for r in stages] == [("core", 396.0)]
    old = by_metric(records("v1_sleep_summary_inbed.json", ctx), "sleep")
    in_bed = next(r for r in old if r.label == "in_bed")
    assert in_bed.start.isoformat() == "2021-12-18T02:12:50+08:00"  # its own in-bed span
    assert in_bed.end.isoformat() == "2021-12-18T09:04:45+08:00"
    assert next(r for r in old if r.label == "asleep").value == pytest.approx(366.5)
    new = by_metric(records("v6_sleep_summary_phases.json", ctx), "sleep")
    totals = {r.label: r.value for r in new}
    assert totals == pytest.approx(
        {"in_bed": 488.701, "deep": 51.5, "core": 198.0, "rem": 75.5, "awake": 7.0}
    )
    assert new[0].origin == "Irvin's iPhone|Irvin’s Apple Watch"


def test_recorded_workout_and_the_documented_v2_day(ctx):
    walk = records("v1_workout_walking.json", ctx)
    assert [(r.metric, r.label) for r in walk] == [
        ("workout", "Walking"),
        ("workout_energy", "Walking"),
    ]
    assert walk[1].value == pytest.approx(226.21122641832523 / 4.184, abs=1e-3)
    stats = PushStats()
    with open(hae("v2_day_constructed.json"), "rb") as body:
        day = list(read_stream(body, ctx, stats=stats))
    assert stats.unknown == {"blood_glucose": 1}
    steps = by_metric(day, "steps")
    assert [r.end - r.start for r in steps] == [timedelta(hours=1)] * 2  # hourly buckets
    assert by_metric(day, "resting_hr")[0].value == 54
    assert by_metric(day, "hrv_sdnn")[0].value == pytest.approx(48.2)
    assert [r.value for r in by_metric(day, "active_energy")] == [100.0, 200.0]
    assert by_metric(day, "workout_distance")[0].value == pytest.approx(5.8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-02-06 14:30:00 -0800", "2024-02-06T14:30:00-08:00"),
        ("2021-12-24 3:04:05 PM +0800", "2021-12-24T15:04:05+08:00"),
        ("2021-12-24 12:04:05\u202fam +0800", "2021-12-24T00:04:05+08:00"),  # iOS 17's NNBSP
        ("2021-12-24 00:04:00 +05:30", "2021-12-24T00:04:00+05:30"),
    ],
)
def test_dates_as_the_app_writes_them(text, expected):
    assert parse_date(text).isoformat() == expected


def test_daily_buckets_are_inferred_and_a_bigger_day_replaces_the_smaller(
    settings, store, memory_keyring
):
    day = payload(
        "step_count",
        "count",
        [
            {"date": "2026-11-17 00:00:00 +0100", "qty": 9000},
            {"date": "2026-11-18 00:00:00 +0100", "qty": 1200},
        ],
    )
    now = datetime(2026, 11, 18, 12, tzinfo=UTC)

    def push() -> Any:
        body = io.BytesIO(json.dumps(day).encode())
        return receive(store, settings, "phone", "health-auto-export", body, now=now)

    push()
    day["data"]["metrics"][0]["data"][1]["qty"] = 4800  # later the same day: more steps
    second = push()
    assert (second.received, second.stored, second.known) == (2, 1, 1)
    with store.session() as s:
        rows = s.execute(
            select(Reading.start_utc, Reading.end_utc, Reading.value).order_by(Reading.start_utc)
        ).all()
    assert [r.value for r in rows] == [9000, 4800]
    assert all(r.end_utc - r.start_utc == timedelta(days=1) for r in rows)


def test_the_shortcut_format(ctx):
    body = {
        "samples": [
            {
                "type": "heart_rate",
                "value": 1.1,
                "unit": "count/s",
                "start": "2026-11-18T07:00:00+01:00",
            },
            {
                "type": "step_count",
                "value": 300,
                "start": "2026-11-18T07:00:00+01:00",
                "end": "2026-11-18T07:10:00+01:00",
                "source": "Jane’s Apple Watch",
            },
            {
                "type": "sleep",
                "stage": "Deep",
                "start": "2026-11-18T01:00:00+01:00",
                "end": "2026-11-18T01:45:00+01:00",
            },
            {"type": "blood_glucose", "value": 90, "start": "2026-11-18T07:00:00+01:00"},
            {"type": "step_count", "value": "many", "start": "2026-11-18T07:00:00+01:00"},
        ]
    }
    stats = PushStats()
    out = list(read_shortcut(io.BytesIO(json.dumps(body).encode()), ctx, stats=stats))
    assert [(getattr(r, "metric", None), getattr(r, "value", None)) for r in out[:3]] == [
        ("heart_rate", 66.0),
        ("steps", 300.0),
        ("sleep", 45.0),
    ]
    assert out[2].label == "deep"
    assert type(out[3]).__name__ == "Skipped"
    assert stats.unknown == {"blood_glucose": 1}
    for bad in (b"[]", b'{"samples": 3}', b"{}", b'{"samples": [', b"\xff\xfe"):
        with pytest.raises(InputError):
            list(read_shortcut(io.BytesIO(bad), ctx, stats=PushStats()))


# --- the endpoint on a real server ----------------------------------------------------


@pytest.fixture
def push_settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "push": settings.push.model_copy(
                update={"enabled": True, "max_body_mb": 2, "max_inflated_mb": 8}
            )
        }
    )


@pytest.fixture
def server(push_settings, store, memory_keyring) -> Iterator[tuple[str, str]]:
    token = create_token(push_settings, "jane-iphone")
    web = BackgroundServer(push_settings, store, host="127.0.0.1", port=0, page=False).start()
    try:
        yield web.url, token
    finally:
        web.stop()


def post(
    url: str, path: str, body: bytes, token: str | None, timeout: float = 30, **headers: str
) -> httpx.Response:
    if token:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(url + path, content=body, headers=headers, timeout=timeout)


def readings(store: Store) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(Reading)).scalar_one()


def test_a_recorded_payload_is_stored_once_and_reported(server, store):
    url, token = server
    body = hae("v6_sleep_summary_phases.json").read_bytes()
    first = post(url, "/api/push/health-auto-export", body, token)
    assert first.status_code == 200, first.text
    doc = first.json()
    assert (doc["device"], doc["received"], doc["stored"], doc["already_known"]) == (
        "jane-iphone",
        5,
        5,
        0,
    )
    again = post(
        url,
        "/api/push/health-auto-export",
        gzip.compress(body),
        token,
        **{"content-encoding": "gzip"},
    )
    assert again.json()["stored"] == 0 and again.json()["already_known"] == 5
    assert readings(store) == 5
    with store.session() as s:
        state = s.execute(
            select(SyncState).where(SyncState.partition == "jane-iphone")
        ).scalar_one()
    assert (state.status, state.last_records, state.records_total) == ("ok", 5, 10)


def test_tokens_are_required_revocable_and_never_the_page_token(server, store, push_settings):
    url, token = server
    body = hae("v1_sleep_stages.json").read_bytes()
    for sent in (None, "wrong", token + "x"):
        answer = post(url, "/api/push/health-auto-export", body, sent)
        assert answer.status_code == 401 and "www-authenticate" in answer.headers
    assert httpx.get(url + "/").status_code == 404  # the page is off; only pushes are served
    assert revoke_token(push_settings, "jane-iphone")
    assert post(url, "/api/push/health-auto-export", body, token).status_code == 401
    assert readings(store) == 0


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (b'{"data": {"metrics": [{"name": "step_count", "data": [', {}, 400),  # truncated
        (b"not json", {}, 400),
        (b"[1, 2]", {}, 400),
        (b'{"data": {"metrics": 3}}', {}, 400),
        (b"{}", {}, 400),
        (b" " * (3 << 20), {}, 413),  # over max_body_mb = 2
        (gzip.compress(b" " * (64 << 20)), {"content-encoding": "gzip"}, 413),  # a gzip bomb
        (b"\x1f\x8b\x08\x00garbage", {"content-encoding": "gzip"}, 400),
        (b"{}", {"content-encoding": "br"}, 415),
    ],
)
def test_bad_pushes_are_one_line_4xx_and_store_nothing(server, store, body, headers, status):
    url, token = server
    good = json.loads(hae("v2_day_constructed.json").read_text())
    # A valid first half does not survive a broken second half: one transaction.
    prefix = json.dumps(good)[:-3].encode() if body.startswith(b'{"data": {"metrics": [{') else b""
    answer = post(
        url, "/api/push/health-auto-export", prefix + body if prefix else body, token, **headers
    )
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert "\n" not in error and error
    assert readings(store) == 0


def test_absurd_values_are_skipped_and_counted(server, store):
    url, token = server
    body = payload(
        "heart_rate",
        "count/min",
        [
            {"date": "2026-11-18 07:00:00 +0100", "qty": 61},
            {"date": "2026-11-18 07:01:00 +0100", "qty": 9000},
            {"date": "1900-01-01 07:01:00 +0100", "qty": 60},
            {"date": "yesterday", "qty": 60},
            "not an object",
        ],
    )
    doc = post(url, "/api/push/health-auto-export", json.dumps(body).encode(), token).json()
    assert (doc["received"], doc["stored"]) == (5, 1)
    assert sum(doc["skipped"].values()) == 4
    assert readings(store) == 1


def test_the_page_and_its_token_are_untouched_when_both_are_on(
    push_settings, store, memory_keyring
):
    from bridge.auth.access import get_access_token

    token = create_token(push_settings, "watch")
    with BackgroundServer(push_settings, store, host="127.0.0.1", port=0) as web:
        body = hae("v1_sleep_stages.json").read_bytes()
        # No CSRF token, no page cookie: a device token is what a push needs.
        assert post(web.url, "/api/push/health-auto-export", body, token).status_code == 200
        assert httpx.get(web.url + "/").status_code == 200
        assert httpx.post(web.url + "/api/feedback", json={}).status_code == 403  # CSRF still
        # A push is not held to the page's small body cap (web.max_body_kb): it has its own.
        big = payload(
            "heart_rate",
            "count/min",
            [
                {"date": f"2026-11-18 {h:02d}:{m:02d}:00 +0100", "qty": 60}
                for h in range(24)
                for m in range(60)
            ],
        )
        raw = json.dumps(big).encode()
        assert len(raw) > push_settings.web.max_body_kb * 1024
        assert post(web.url, "/api/push/health-auto-export", raw, token).status_code == 200
    assert get_access_token(push_settings) is None  # no page token was made or changed


# --- the two Apple paths ----------------------------------------------------------------


def test_pushed_and_imported_days_count_once(settings, store, memory_keyring, ctx, tmp_path):
    """The export wins the days it holds completely; on its last day, the pushes win."""
    from bridge.cycle.meters import load_frames
    from mappings.frames import Readings
    from mappings.steps import resolve

    export = tmp_path / "export.xml"
    rows = []
    for day in (16, 17, 18):
        for hour in (9, 13, 17):
            t = datetime(2026, 11, day, hour, tzinfo=BERLIN)
            rows.append(
                f'<Record type="HKQuantityTypeIdentifierStepCount" sourceName="Jane’s Apple Watch" unit="count" '
                f'startDate="{t:%Y-%m-%d %H:%M:%S %z}" endDate="{t + timedelta(minutes=30):%Y-%m-%d %H:%M:%S %z}" value="1000"/>'
            )
    export.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en_US">\n'
        + "\n".join(rows)
        + "\n</HealthData>\n"
    )
    from bridge.intake.ingest import import_file

    import_file(store, "apple-health", export, ctx)
    push = payload(
        "step_count",
        "count",
        [
            {
                "date": f"2026-11-{d} 00:00:00 +0100",
                "qty": q,
                "source": "Jane’s Apple Watch",
            }
            for d, q in ((16, 3000), (17, 3000), (18, 7000), (19, 500))
        ],
    )
    receive(store, settings, "phone", "health-auto-export", io.BytesIO(json.dumps(push).encode()))
    lo = datetime(2026, 11, 15, tzinfo=UTC)
    frame, _ = load_frames(store, lo, lo + timedelta(days=6))
    kept = resolve(Readings(frame, BERLIN), ())
    per_day = kept.groupby(pd_day(kept["start"]))["kept"].sum().to_dict()
    # 16th, 17th: complete in the export (3 x 1000). 18th: the export's last day, the push
    # (7000, sent later) wins. 19th: only pushed.
    assert per_day == {
        "2026-11-16": 3000,
        "2026-11-17": 3000,
        "2026-11-18": 7000,
        "2026-11-19": 500,
    }


def pd_day(ns: Any) -> Any:
    import pandas as pd

    return pd.DatetimeIndex(pd.to_datetime(ns, utc=True)).tz_convert(BERLIN).strftime("%Y-%m-%d")


def test_the_push_token_commands(tmp_path, memory_keyring):
    from bridge.cli.main import app
    from tests.helpers import write_config

    cfg = write_config(tmp_path / "c.toml", tmp_path / "data", push="[push]\nenabled = true")
    runner = CliRunner()
    env = {"RHYTHM_BRIDGE_CONFIG": str(cfg)}
    made = runner.invoke(app, ["push-token", "create", "jane-iphone"], env=env)
    assert made.exit_code == 0, made.output
    token = made.stdout.strip().splitlines()[-1]
    assert token.startswith("rbp_") and len(token) > 40
    assert runner.invoke(app, ["push-token", "create", "jane-iphone"], env=env).exit_code == 2
    listed = runner.invoke(app, ["push-token", "list", "--json"], env=env)
    assert json.loads(listed.stdout)[0]["device"] == "jane-iphone" and token not in listed.stdout
    assert token not in repr(memory_keyring.entries)  # only its digest is kept
    assert runner.invoke(app, ["push-token", "revoke", "jane-iphone"], env=env).exit_code == 0
    assert runner.invoke(app, ["push-token", "revoke", "jane-iphone"], env=env).exit_code == 2
    bad = runner.invoke(app, ["push-token", "create", "../etc"], env=env)
    assert bad.exit_code == 2 and "device name" in bad.output


def first_slot_of(store: Store, now: datetime) -> Any:
    with store.session() as s:
        return (
            s.execute(
                select(MeterSnapshot)
                .where(MeterSnapshot.local_date == now.date())
                .order_by(MeterSnapshot.slot)
            )
            .scalars()
            .first()
        )


def test_a_push_becomes_meters_in_the_next_cycle(push_settings, store, memory_keyring):
    """End to end: the recorded-shape day, pushed over HTTP, feeds the next cycle's meters."""
    from bridge.cycle.run import data_lock, run_cycle

    token = create_token(push_settings, "jane-iphone")
    now = datetime(2026, 11, 18, 19, 30, tzinfo=BERLIN)
    run_cycle(push_settings, store, now, only=[])  # before the push: nothing to go on
    assert first_slot_of(store, now).vitality is None
    with BackgroundServer(push_settings, store, host="127.0.0.1", port=0, page=False) as web:
        body = hae("v2_day_constructed.json").read_bytes()
        # A cycle in progress (it holds the data lock) does not hold a push up.
        with data_lock(push_settings.data_path):
            answer = post(web.url, "/api/push/health-auto-export", body, token)
        assert answer.status_code == 200
    run_cycle(push_settings, store, now, only=[])
    snap = first_slot_of(store, now)
    provenance = json.loads(snap.provenance)
    used = json.dumps(provenance["vitality"])
    assert snap.vitality is not None
    assert "sleep" in used and "steps" in used


def test_a_recorded_payload_becomes_meters_in_the_next_cycle(push_settings, store, memory_keyring):
    """The app's own recorded night (HAE 6.6.2 summary), pushed over HTTP, read by the cycle."""
    from bridge.cycle.run import run_cycle

    token = create_token(push_settings, "irvin-iphone")
    # The morning after the recorded night (2023-01-31, 00:23-08:39 at +08:00).
    now = datetime(2023, 1, 31, 9, 30, tzinfo=BERLIN)
    with BackgroundServer(push_settings, store, host="127.0.0.1", port=0, page=False) as web:
        body = hae("v6_sleep_summary_phases.json").read_bytes()
        assert post(web.url, "/api/push/health-auto-export", body, token).status_code == 200
    run_cycle(push_settings, store, now, only=[])
    snap = first_slot_of(store, now)
    cognition = json.loads(snap.provenance)["cognition"]
    assert snap.cognition is not None
    share = next(i for i in cognition["inputs"] if i["name"] == "deep_sleep_share")
    assert share["value"] == pytest.approx(51.5 / (51.5 + 198 + 75.5), abs=1e-3)  # the stages
