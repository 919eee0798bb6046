import json

import httpx
import pytest
import respx
from sqlmodel import select

from bridge.errors import InputError, RateLimited, SourceError, Transient
from bridge.intake.ingest import import_feed
from bridge.store.models import CalendarEvent, SyncState
from connectors import ics
from tests.conftest import SAMPLE

URL = "https://p12-caldav.icloud.com/published/2/SECRETTOKEN123"
BODY = (SAMPLE / "calendar.ics").read_bytes()


def _state(store):
    with store.session() as s:
        return s.exec(select(SyncState).where(SyncState.stream == "feed")).one()


@respx.mock
def test_feed_is_imported_then_a_304_costs_nothing(store, ctx):
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(
                200,
                content=BODY,
                headers={"ETag": '"v1"', "Last-Modified": "Wed, 18 Nov 2026 10:00:00 GMT"},
            ),
            httpx.Response(304),
        ]
    )
    first = import_feed(store, URL, ctx)
    events = store.count(CalendarEvent)
    assert first.new == events > 100
    assert "SECRETTOKEN" not in first.line() and "p12-caldav.icloud.com" in first.line()
    state = _state(store)
    assert json.loads(state.cursor)["etag"] == '"v1"' and "SECRETTOKEN" not in state.partition
    second = import_feed(store, URL, ctx)
    assert second.not_modified and "not modified" in second.line()
    sent = route.calls[1].request.headers
    assert sent["If-None-Match"] == '"v1"'
    assert sent["If-Modified-Since"] == "Wed, 18 Nov 2026 10:00:00 GMT"
    assert store.count(CalendarEvent) == events
    with store.session() as s:
        ids = set(s.exec(select(CalendarEvent.calendar_id)).all())
    assert ids == {ics.feed_id(URL)}


@respx.mock
def test_validators_are_not_sent_on_a_new_day(store, ctx):
    from dataclasses import replace
    from datetime import timedelta

    route = respx.get(URL).mock(
        return_value=httpx.Response(200, content=BODY, headers={"ETag": '"v1"'})
    )
    import_feed(store, URL, ctx)
    # The next day the series must be expanded again even if the feed did not change.
    again = import_feed(store, URL, replace(ctx, now=ctx.now + timedelta(days=1)))
    assert "If-None-Match" not in route.calls[1].request.headers
    assert again.new > 0 and not again.not_modified  # instances that entered the window


@respx.mock
def test_webcal_links_are_fetched_over_https(store, ctx):
    route = respx.get(URL).mock(return_value=httpx.Response(200, content=BODY))
    import_feed(store, "webcal://" + URL.removeprefix("https://"), ctx)
    assert route.called


@pytest.mark.parametrize(
    ("response", "error", "needle"),
    [
        (
            httpx.Response(200, content=b"<!DOCTYPE html><html>Sign in</html>"),
            InputError,
            "HTML page",
        ),
        (httpx.Response(404), SourceError, "revoked or is wrong"),
        (httpx.Response(503), Transient, "server error"),
        (httpx.Response(429, headers={"Retry-After": "120"}), RateLimited, "rate limited"),
    ],
)
@respx.mock
def test_feed_failures_write_nothing(store, ctx, response, error, needle):
    respx.get(URL).mock(return_value=response)
    with pytest.raises(error, match=needle) as err:
        import_feed(store, URL, ctx)
    assert "SECRETTOKEN" not in str(err.value)
    assert store.count(CalendarEvent) == 0 and store.count(SyncState) == 0
    if error is RateLimited:
        assert err.value.retry_after == 120


@respx.mock
def test_network_errors_are_transient(store, ctx):
    respx.get(URL).mock(side_effect=httpx.ConnectError("boom"))
    with pytest.raises(Transient, match="network error"):
        import_feed(store, URL, ctx)


GOOGLE_EXPORT = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Google Inc//Google Calendar 70.9054//EN\r
X-WR-CALNAME:Work\r
X-WR-TIMEZONE:America/New_York\r
BEGIN:VEVENT\r
UID:weekly-sync@google.com\r
SUMMARY:Weekly sync\r
DTSTART:20261102T140000Z\r
DTEND:20261102T143000Z\r
RRULE:FREQ=WEEKLY;COUNT=4\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:weekly-sync@google.com\r
RECURRENCE-ID:20261109T140000Z\r
SUMMARY:Weekly sync\r
DTSTART:20261109T140000Z\r
DTEND:20261109T143000Z\r
STATUS:CANCELLED\r
END:VEVENT\r
END:VCALENDAR\r
"""


def test_google_export_with_x_wr_timezone_and_a_cancelled_instance(ctx):
    records = list(ics.records_from_bytes(GOOGLE_EXPORT, "work", ctx, "work.ics"))
    events = {e.recurrence_id: e for e in records if isinstance(e, ics.EventRecord)}
    # X-WR-TIMEZONE turns the UTC times into New York wall time (9:00, DST ended Nov 1).
    first = events["20261102T140000Z"]
    assert first.start.hour == 9 and str(first.start.tzinfo) == "America/New_York"
    cancelled = [e for e in events.values() if e.status == "cancelled"]
    assert [e.recurrence_id for e in cancelled] == ["20261109T140000Z"]
    assert len(events) == 4
