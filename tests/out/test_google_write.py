"""The opt-in Google write-back against the fake Calendar API (tests/fake_apis.py).

The fake follows the Calendar API's documented behaviour, not this client: a client-chosen
event id must be base32hex and unique per calendar (409 duplicate, deleted events
included), a deleted event stays as cancelled (deleting it again answers 410, patching it
brings it back), an unknown id answers 404, and writing needs the events scope (403
insufficientPermissions otherwise). The recommendations come from the real .ics work week
through the real cycle code, in the test's database (SQLite or PostgreSQL).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, select
from sqlmodel import col

from bridge.auth.secrets import Secrets
from bridge.cycle.answer import answer
from bridge.cycle.recommend import recommend
from bridge.intake.ingest import import_file
from bridge.out.google_write import event_id, push
from bridge.out.status import collect_status
from bridge.store.models import CalendarEvent, GoogleWrite, SyncState
from connectors.base import ReadContext
from connectors.google_calendar import TOKEN_SECRET, WRITE_SCOPE, WRITE_TOKEN_SECRET
from tests.conftest import BERLIN
from tests.cycle.test_windows import ICS, at
from tests.fake_apis import READONLY, FakeAPIs

MONDAY = at(2026, 11, 23, 5, 5)
TUESDAY = at(2026, 11, 24, 5, 5)


@pytest.fixture
def fake():
    with FakeAPIs(now=datetime(2026, 11, 23, 4, 0, tzinfo=UTC)) as api:
        api.google_grants["write-refresh"] = {WRITE_SCOPE}
        yield api


def token(refresh: str, scope: str) -> dict:
    return {
        "token": "stale-access-token",
        "refresh_token": refresh,
        "client_id": "1234-abc.apps.googleusercontent.com",
        "client_secret": "google-client-secret",
        "scopes": [scope],
        "expiry": "2026-01-01T00:00:00.000000Z",
    }


@pytest.fixture
def wsettings(settings, fake, memory_keyring):
    """Write-back on into "primary" of the fake, with the write consent stored."""
    google = fake.settings()["google_calendar"]
    cfg = settings.model_copy(
        update={
            "google_write": settings.google_write.model_copy(update={"enabled": True}),
            "sources": settings.sources.model_copy(
                update={
                    "google_calendar": settings.sources.google_calendar.model_copy(
                        update={
                            "api_base_url": google["api_base_url"],
                            "token_url": google["token_url"],
                            "calendars": ["primary"],
                        }
                    )
                }
            ),
        }
    )
    Secrets.from_settings(cfg).set_json(WRITE_TOKEN_SECRET, token("write-refresh", WRITE_SCOPE))
    return cfg


@pytest.fixture
def week(store):
    import_file(store, "ics", ICS, ReadContext(tz=BERLIN, now=at(2026, 11, 22, 12, 0)))
    return store


def accepted(store, settings, now=MONDAY):
    rec = recommend(store, settings, now, runner_name="heuristic")
    answer(store, settings, rec.id, "accept", now + timedelta(minutes=1))
    return rec


def ours(fake, calendar="primary") -> dict[str, dict]:
    return {k: v for k, v in fake.written[calendar].items()}


def rows(store) -> dict[int, GoogleWrite]:
    with store.session() as s:
        return {r.recommendation_id: r for r in s.execute(select(GoogleWrite)).scalars()}


# ---- consent and opt-in --------------------------------------------------------------


def test_nothing_is_written_without_the_opt_in(week, wsettings, fake):
    off = wsettings.model_copy(
        update={"google_write": wsettings.google_write.model_copy(update={"enabled": False})}
    )
    accepted(week, off)
    report = push(week, off, MONDAY + timedelta(minutes=2))
    assert report.status == "off"
    assert fake.written["primary"] == {} and fake.counts["/google/token"] == 0
    assert rows(week) == {}


def test_without_the_write_consent_it_says_which_command_and_writes_nothing(week, wsettings, fake):
    secrets = Secrets.from_settings(wsettings)
    secrets.delete(WRITE_TOKEN_SECRET)
    # The read-only token of the sync is there; it is never used for writing.
    secrets.set_json(TOKEN_SECRET, token("read-refresh", READONLY))
    accepted(week, wsettings)
    report = push(week, wsettings, MONDAY + timedelta(minutes=2))
    assert report.status == "needs_consent"
    assert "rhythm-bridge auth google-write" in report.error
    assert fake.written["primary"] == {} and fake.counts["/google/token"] == 0
    status = collect_status(wsettings, week, MONDAY + timedelta(minutes=3))
    assert any("rhythm-bridge auth google-write" in w for w in status["warnings"])


@pytest.mark.parametrize("how", ["read-only consent", "revoked"])
def test_a_missing_scope_or_a_revoked_consent_asks_for_the_consent_again(
    week, wsettings, fake, how
):
    if how == "revoked":
        fake.google_revoked.add("write-refresh")
    else:
        fake.google_grants["write-refresh"] = {READONLY}
    rec = accepted(week, wsettings)
    report = push(week, wsettings, MONDAY + timedelta(minutes=2))
    assert report.status == "needs_consent", report
    assert "rhythm-bridge auth google-write" in report.error
    assert fake.written["primary"] == {} and rows(week) == {}
    # Consent given again: the next push writes what was waiting.
    fake.google_revoked.clear()
    fake.google_grants["write-refresh"] = {WRITE_SCOPE}
    assert push(week, wsettings, MONDAY + timedelta(minutes=20)).inserted == 1
    assert list(ours(fake)) == [event_id(rec)]


# ---- what is written ------------------------------------------------------------------


def test_an_accepted_suggestion_becomes_one_marked_event_and_a_second_push_sends_nothing(
    week, wsettings, fake
):
    rec = accepted(week, wsettings)
    report = push(week, wsettings, MONDAY + timedelta(minutes=2))
    assert (report.status, report.inserted) == ("ok", 1)
    eid = event_id(rec)
    assert 5 <= len(eid) <= 1024 and set(eid) <= set("0123456789abcdefghijklmnopqrstuv")
    event = fake.written["primary"][eid]
    assert event["status"] == "confirmed" and event["transparency"] == "opaque"
    assert event["summary"] == rec.action.replace("_", " ").capitalize()
    start = datetime.fromisoformat(event["start"]["dateTime"])
    end = datetime.fromisoformat(event["end"]["dateTime"])
    assert (start, end) == (rec.window_start, rec.window_end)
    assert event["extendedProperties"]["private"]["rhythmBridge"] == "suggestion"
    assert "rationale" not in str(event) and rec.rationale not in str(event)
    before = list(fake.write_log)
    again = push(week, wsettings, MONDAY + timedelta(minutes=17))
    assert (again.inserted, again.updated, again.deleted) == (0, 0, 0)
    assert fake.write_log == before


def test_an_insert_whose_answer_was_lost_is_not_written_twice(week, wsettings, fake):
    rec = accepted(week, wsettings)
    push(week, wsettings, MONDAY + timedelta(minutes=2))
    # As if Google stored the event but the answer never arrived: nothing recorded here.
    with week.transaction() as s:
        s.execute(delete(GoogleWrite))
    report = push(week, wsettings, MONDAY + timedelta(minutes=17))
    assert report.status == "ok" and report.inserted == 1  # 409 duplicate, then a patch
    assert list(ours(fake)) == [event_id(rec)]
    assert [op for op, _, _ in fake.write_log] == ["insert", "patch"]


@pytest.mark.parametrize(
    "faults",
    # httplib2 sends a request again once by itself when the connection drops: twice here.
    [[503], [429], [0, 0]],
    ids=["503", "429", "dropped"],
)
def test_a_failed_write_is_tried_again_on_the_next_cycle(week, wsettings, fake, faults):
    from bridge.cycle.run import run_cycle

    accepted(week, wsettings)
    fake.write_faults = list(faults)
    report = run_cycle(wsettings, week, now=MONDAY + timedelta(minutes=2), only=[])
    assert report.google_write["status"] == "retry", report.google_write
    assert "next cycle" in report.google_write["error"]
    assert report.snapshot is not None  # the cycle went on
    assert fake.written["primary"] == {} and rows(week) == {}
    later = run_cycle(wsettings, week, now=MONDAY + timedelta(minutes=17), only=[])
    assert later.google_write["status"] == "ok" and later.google_write["inserted"] == 1
    assert len(fake.written["primary"]) == 1


def test_a_proposal_is_tentative_accepting_confirms_it_and_ignoring_deletes_it(
    week, wsettings, fake
):
    rec = recommend(week, wsettings, TUESDAY, runner_name="heuristic")
    _, _, proposal = answer(week, wsettings, rec.id, "reschedule", TUESDAY + timedelta(minutes=1))
    assert push(week, wsettings, TUESDAY + timedelta(minutes=2)).inserted == 1
    eid = event_id(proposal)
    assert fake.written["primary"][eid]["status"] == "tentative"
    assert event_id(rec) not in fake.written["primary"]  # the rescheduled one is not written
    # Rescheduled again: this proposal's event goes, the next proposal's comes.
    _, _, second = answer(
        week, wsettings, proposal.id, "reschedule", TUESDAY + timedelta(minutes=3)
    )
    report = push(week, wsettings, TUESDAY + timedelta(minutes=4))
    assert (report.deleted, report.inserted) == (1, 1)
    assert fake.written["primary"][eid]["status"] == "cancelled"
    assert fake.written["primary"][event_id(second)]["status"] == "tentative"
    # Accepted: the same event, now confirmed (patched, not a new one).
    answer(week, wsettings, second.id, "accept", TUESDAY + timedelta(minutes=5))
    report = push(week, wsettings, TUESDAY + timedelta(minutes=6))
    assert (report.updated, report.inserted) == (1, 0)
    assert fake.written["primary"][event_id(second)]["status"] == "confirmed"
    assert rows(week)[proposal.id].state == "absent"
    assert rows(week)[second.id].state == "present"


def test_an_event_the_person_already_deleted_is_not_an_error(week, wsettings, fake):
    rec = recommend(week, wsettings, TUESDAY, runner_name="heuristic")
    _, _, proposal = answer(week, wsettings, rec.id, "reschedule", TUESDAY + timedelta(minutes=1))
    push(week, wsettings, TUESDAY + timedelta(minutes=2))
    fake.written["primary"][event_id(proposal)]["status"] = "cancelled"  # deleted in Google
    answer(week, wsettings, proposal.id, "ignore", TUESDAY + timedelta(minutes=3))
    report = push(week, wsettings, TUESDAY + timedelta(minutes=4))
    assert report.status == "ok" and report.deleted == 1  # Google answered 410: done
    assert rows(week)[proposal.id].state == "absent"


def test_the_persons_own_events_are_never_touched(week, wsettings, fake):
    rec = recommend(week, wsettings, MONDAY, runner_name="heuristic")
    eid = event_id(rec)
    # An event of the person's own under that very id (no rhythm-bridge mark).
    theirs = {
        "id": eid,
        "status": "confirmed",
        "summary": "Piano lesson",
        "start": {"dateTime": "2026-11-23T18:00:00+01:00"},
        "end": {"dateTime": "2026-11-23T19:00:00+01:00"},
        "updated": "2026-11-20T10:00:00Z",
    }
    fake.written["primary"][eid] = dict(theirs)
    answer(week, wsettings, rec.id, "accept", MONDAY + timedelta(minutes=1))
    report = push(week, wsettings, MONDAY + timedelta(minutes=2))
    assert report.skipped and eid in report.skipped[0]
    assert fake.written["primary"][eid] == theirs
    assert fake.write_log == []  # nothing changed or deleted: not theirs, not the world's


def test_the_sync_does_not_read_written_suggestions_back(week, wsettings, fake):
    from bridge.intake.sources import read_context, run_source

    secrets = Secrets.from_settings(wsettings)
    secrets.set_json(TOKEN_SECRET, token("read-refresh", READONLY))
    sync = wsettings.model_copy(
        update={
            "sources": wsettings.sources.model_copy(
                update={
                    "google_calendar": wsettings.sources.google_calendar.model_copy(
                        update={"enabled": True}
                    )
                }
            )
        }
    )
    ctx = read_context(sync, MONDAY)
    assert run_source(week, sync, "google_calendar", ctx).status == "ok"  # full list
    rec = accepted(week, sync)
    push(week, sync, MONDAY + timedelta(minutes=2))
    assert event_id(rec) in fake.written["primary"]
    fake.fixed_now = datetime(2026, 11, 23, 5, 0, tzinfo=UTC)
    assert run_source(week, sync, "google_calendar", ctx).status == "ok"  # incremental
    with week.session() as s:
        uids = set(s.execute(select(CalendarEvent.uid)).scalars())
    assert event_id(rec) not in uids
    # A fresh full list (a new install, a 410) does not read it back either.
    with week.transaction() as s:
        s.execute(delete(CalendarEvent).where(col(CalendarEvent.source) == "google_calendar"))
        s.execute(delete(SyncState).where(col(SyncState.source) == "google_calendar"))
    assert run_source(week, sync, "google_calendar", ctx).status == "ok"
    with week.session() as s:
        uids = set(s.execute(select(CalendarEvent.uid)).scalars())
        assert uids  # the person's events are read
    assert event_id(rec) not in uids


@pytest.mark.parametrize("calendar", ["work@example.com", "nosuch@group.calendar.google.com"])
def test_a_calendar_that_cannot_be_written_is_named_in_status(week, wsettings, fake, calendar):
    from bridge.cycle.run import run_cycle

    fake.read_only_calendars.add("work@example.com")
    cfg = wsettings.model_copy(
        update={"google_write": wsettings.google_write.model_copy(update={"calendar": calendar})}
    )
    accepted(week, cfg)
    report = run_cycle(cfg, week, now=MONDAY + timedelta(minutes=2), only=[])
    assert report.google_write["status"] == "error" and report.snapshot is not None
    error = report.google_write["error"]
    assert f"[google_write] calendar {calendar!r}" in error
    assert ("no writer access" if calendar.startswith("work") else "no such calendar") in error
    status = collect_status(cfg, week, MONDAY + timedelta(minutes=3))
    assert error in status["warnings"]
    assert all(not events for events in fake.written.values())


def test_another_calendar_in_the_config_moves_the_written_events(week, wsettings, fake):
    rec = accepted(week, wsettings)
    push(week, wsettings, MONDAY + timedelta(minutes=2))
    moved = wsettings.model_copy(
        update={
            "google_write": wsettings.google_write.model_copy(
                update={"calendar": "work@example.com"}
            )
        }
    )
    report = push(week, moved, MONDAY + timedelta(minutes=17))
    assert (report.deleted, report.inserted) == (1, 1)
    eid = event_id(rec)
    assert fake.written["primary"][eid]["status"] == "cancelled"
    assert fake.written["work@example.com"][eid]["status"] == "confirmed"
    assert rows(week)[rec.id].calendar_id == "work@example.com"


def test_suggestions_already_over_when_it_is_turned_on_stay_out(week, wsettings, fake):
    rec = accepted(week, wsettings)
    after = rec.window_end + timedelta(minutes=1)
    assert push(week, wsettings, after).inserted == 0
    assert fake.written["primary"] == {} and fake.counts["/google/token"] == 0
