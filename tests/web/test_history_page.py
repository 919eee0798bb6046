"""The history page and /api/history on a year of generated data, in Debian's chromium."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, date, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from bridge.cycle.meters import recompute_meters
from bridge.store.models import Feedback, Recommendation
from bridge.web.app import create_app
from bridge.web.server import BackgroundServer
from tests.conftest import BERLIN
from tests.web.test_web_browser import ARTIFACTS, ROOT, browser  # noqa: F401

LAST = date(2026, 11, 19)
NOW = datetime(2026, 11, 19, 21, 0, tzinfo=BERLIN)
RESPONSES = ("accepted", "ignored", "rescheduled")


@pytest.fixture
def year(store, settings):
    """365 days of steps, sleep stages, HRV, resting HR and calendar (the benchmark's
    generator, minute heart rate left out), meters computed, and an answer every 4th day."""
    from benchmarks.meters import load_into, synth

    readings, events = synth(LAST - timedelta(days=364), 365)
    load_into(store, readings[readings["metric"] != "heart_rate"], events)
    recompute_meters(store, settings, NOW)
    with store.transaction() as session:
        for i in range(0, 365, 4):
            day = LAST - timedelta(days=i)
            rec = Recommendation(
                local_date=day,
                slot=1,
                timestep=day.weekday() * 4 + 1,
                action="DEEP_WORK",
                runner="bundled",
                created_at=datetime.now(UTC),
            )
            session.add(rec)
            session.flush()
            session.add(
                Feedback(
                    recommendation_id=rec.id,
                    response=RESPONSES[i % 3],
                    reward=0.0,
                    channel="web",
                    created_at=datetime.now(UTC),
                )
            )
    return settings, store


def api(settings, store, path):
    app = create_app(settings, store, host="127.0.0.1", clock=lambda: NOW)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        return client.get(path)


def test_the_api_serves_daily_rows_with_inputs_and_answers(year, memory_keyring):
    settings, store = year
    doc = api(settings, store, "/api/history?range=1y").json()
    assert (doc["range"], doc["bin"], doc["from"], doc["to"]) == (
        "1y",
        "day",
        "2025-11-20",
        "2026-11-19",
    )
    assert len(doc["rows"]) == 365
    row = doc["rows"][200]
    assert row["vitality_min"] <= row["vitality"] <= row["vitality_max"]
    assert 5 < row["sleep_hours"] < 10 and 0 < row["deep_share"] < 0.5
    assert row["hrv_low"] < row["hrv_baseline"] < row["hrv_high"]
    assert row["steps"] > 1000 and row["calendar_hours"] > 0
    assert isinstance(row["vitality_stale"], bool)
    assert len(doc["answers"]) == 92 and {a["response"] for a in doc["answers"]} == set(RESPONSES)
    month = api(settings, store, "/api/history?from=2026-11-01&to=2026-11-19").json()
    assert len(month["rows"]) == 19 and month["range"] == "custom"
    everything = api(settings, store, "/api/history?range=all").json()
    # From the first night's bedtime, the evening before the first generated day.
    assert everything["from"] == "2025-11-19" and everything["stored"]["to"] == "2026-11-19"


def test_long_ranges_are_served_per_week(year, memory_keyring):
    settings, store = year
    doc = api(settings, store, "/api/history?from=2025-06-02&to=2026-11-15").json()
    assert doc["bin"] == "week"
    assert doc["rows"][0]["date"] == "2025-06-02" and doc["rows"][-1]["date"] == "2026-11-09"
    assert all(date.fromisoformat(r["date"]).weekday() == 0 for r in doc["rows"])
    full = [r for r in doc["rows"] if r["vitality"] is not None]
    assert full and all(r["vitality_min"] <= r["vitality"] <= r["vitality_max"] for r in full)


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("range=2y", "range: use one of 4w, 3m, 1y, all"),
        ("from=2026-11-10&to=2026-11-01", "from 2026-11-10 is after to 2026-11-01"),
        ("from=1900-01-01", "use dates between 1970 and 2100"),
        ("from=yesterday", "from/to: use YYYY-MM-DD"),
    ],
)
def test_bad_ranges_are_400_with_one_line(year, memory_keyring, query, needle):
    settings, store = year
    res = api(settings, store, f"/api/history?{query}")
    assert res.status_code == 400 and needle in res.json()["error"]


def test_the_history_page_in_a_browser(year, memory_keyring, browser):  # noqa: F811
    settings, store = year
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with BackgroundServer(settings, store, host="127.0.0.1", port=0, clock=lambda: NOW) as web:
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.goto(web.url + "/history?range=1y")
        meters = page.locator('.card figure[data-chart="vitality"] svg.hchart')
        assert page.locator("figure.hfig").count() == 5 + 6
        for m in ("vitality", "cognition", "progress", "serenity", "connection"):
            chart = page.locator(f'figure[data-chart="{m}"] svg')
            assert chart.locator("polyline.mean").count() >= 1
            assert chart.locator("polygon.range").count() >= 1
        # The answers are on the timeline: every fourth day, coloured by the answer.
        assert meters.locator("circle.mark").count() == 92
        assert meters.locator("circle.mark.acc").count() == 31
        # Date axis: month labels over a year.
        labels = meters.locator("text.xlab").all_text_contents()
        assert "Jan 2026" in labels and len(labels) >= 12
        assert page.locator('figure[data-chart="hrv"] polygon.baseline').count() >= 1
        assert page.locator('figure[data-chart="sleep"] rect.deep').count() > 300
        page.screenshot(path=str(ARTIFACTS / "history-1y.png"), full_page=True)
        if os.environ.get("UPDATE_SCREENSHOT"):
            shutil.copy(ARTIFACTS / "history-1y.png", ROOT / "docs" / "history.png")
        # Hover: the day's values in a tooltip.
        box = meters.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)
        tip = page.locator("#tip")
        tip.wait_for(state="visible")
        assert tip.inner_text().startswith("2026-") and "vitality 0." in tip.inner_text()
        assert "confidence" in tip.inner_text()
        page.screenshot(path=str(ARTIFACTS / "history-hover.png"))
        # The range links: four weeks is 28 daily points, labelled by Mondays.
        page.get_by_role("link", name="4 weeks").click()
        page.wait_for_url("**/history?range=4w")
        assert page.locator('figure[data-chart="vitality"] rect.hit').count() == 28
        page.screenshot(path=str(ARTIFACTS / "history-4w.png"), full_page=True)
        page.close()
    assert not web.thread.is_alive()


def test_an_empty_range_says_where_the_data_is(year, memory_keyring):
    settings, store = year
    app = create_app(settings, store, host="127.0.0.1", clock=lambda: NOW)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        html = client.get("/history?from=2020-01-01&to=2020-01-31").text
    assert (
        "No meters between 2020-01-01 and 2020-01-31; your data runs from 2025-11-19 to 2026-11-19"
        in html
    )


def test_the_page_shows_confidence_and_age_not_only_numbers(demo, memory_keyring, browser):  # noqa: F811
    from tests.conftest import DEMO_NOW

    settings, store = demo
    with BackgroundServer(settings, store, host="127.0.0.1", port=0, clock=lambda: DEMO_NOW) as web:
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.goto(web.url + "/")
        # The demo's serenity has confidence 0.48: drawn hatched and faded, said in words.
        weak = page.locator('li.meter.weak[data-meter="serenity"]')
        assert weak.count() == 1 and "confidence low (0.48)" in weak.inner_text()
        assert page.locator("li.meter.weak").count() == 1
        opacity = weak.locator("meter").evaluate("m => getComputedStyle(m).opacity")
        assert float(opacity) < 0.6
        assert page.get_by_test_id("age-vitality").inner_text() == "newest input 12 min old"
        page.locator("section", has=page.locator("#meters-h")).screenshot(
            path=str(ARTIFACTS / "page-meters.png")
        )
        page.get_by_role("link", name="History: weeks, months, years").click()
        page.wait_for_url("**/history")
        assert page.locator('figure[data-chart="vitality"] polyline.mean').count() >= 1
        page.close()


def test_every_chart_axis_has_its_unit_and_sleep_stages_a_legend(year, memory_keyring):
    """Issue 41 item 8: units on every chart's axis, and which colour is deep and REM."""
    import re

    settings, store = year
    html = api(settings, store, "/history?range=4w").text
    figures = re.findall(r'<figure class="hfig" data-chart="(\w+)">(.*?)</figure>', html, re.S)
    assert len(figures) == 11  # five meters and six inputs
    units = {
        name: re.search(r'<text class="yunit"[^>]*>([^<]+)</text>', body) for name, body in figures
    }
    assert all(units.values()), [n for n, u in units.items() if not u]
    shown = {name: u.group(1) for name, u in units.items()}
    assert shown["vitality"] == "score 0–1" and shown["sleep"] == "hours"
    assert shown["hrv"] == "ms" and shown["resting_hr"] == "bpm" and shown["steps"] == "steps"
    legend = re.search(r'data-testid="sleep-legend">(.*?)</p>', html, re.S).group(1)
    assert 'class="key deep"></span> deep sleep' in legend
    assert 'class="key rem"></span> REM sleep' in legend
    # The answers on the timeline name the action as a person would.
    assert ": Deep work accepted" in html and "DEEP_WORK" not in html


def test_the_default_range_starts_where_the_data_is_dense(store, settings, ctx, memory_keyring):
    """Issue 41 item 8: the sample runs from 2026-10-17; three 2014 readings made "all"
    start in 2014, and the default range began months before any data."""
    from tests.conftest import DEMO_NOW
    from tests.cycle.test_meter_recompute import add_reading, load_sample

    load_sample(store, ctx)
    for day in (3, 9, 21):
        add_reading(store, "resting_hr", datetime(2014, 6, day, 7, 0, tzinfo=UTC), 61.0)
    recompute_meters(store, settings, DEMO_NOW)
    app = create_app(settings, store, host="127.0.0.1", clock=lambda: DEMO_NOW)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        default = client.get("/api/history").json()
        every = client.get("/api/history?range=all").json()
        chosen = client.get("/api/history?range=3m").json()
    assert (default["range"], default["from"], default["to"]) == ("3m", "2026-10-17", "2026-11-19")
    assert (every["from"], every["to"]) == ("2026-10-17", "2026-11-19")
    assert chosen["from"] == "2026-08-21"  # a range asked for by name is that long
