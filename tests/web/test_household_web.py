"""A household's page: each person signs in with their own token and every route shows and
changes only their data; another person's ids are 404; pushes and the calendar feed land in
their token's person only."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from bridge.auth.access import ensure_access_token
from bridge.auth.feed import ensure_feed_token
from bridge.intake.push import create_token
from bridge.store.models import CalendarEvent, Feedback, Reading, Recommendation
from bridge.web.app import create_app
from tests.conftest import DEMO_NOW

PUSH_BODY = Path(__file__).resolve().parents[1] / "fixtures" / "health_auto_export"
ANA_TITLE = "Physio with Dr Kowalska"


@pytest.fixture
def household(demo, memory_keyring):
    """The demo's person `me` with a week of data, and `ana` with one event and one
    recommendation of her own."""
    settings, store = demo
    settings = settings.model_copy(
        update={"push": settings.push.model_copy(update={"enabled": True})}
    )
    store.add_person("ana")
    ana = store.as_person("ana")
    with ana.transaction() as s:
        s.add(
            CalendarEvent(
                source="ics",
                calendar_id="ana",
                uid="physio",
                title=ANA_TITLE,
                start_utc=DEMO_NOW,
                end_utc=DEMO_NOW,
                updated_at=DEMO_NOW,
            )
        )
        s.add(
            Recommendation(
                local_date=date(2030, 1, 1),
                slot=0,
                timestep=0,
                action="EXERCISE",
                runner="bundled",
                belief="null",
                observation="{}",
                created_at=DEMO_NOW,
            )
        )
    return settings, store


def client(settings, store, host="192.168.1.20") -> TestClient:
    app = create_app(settings, store, host=host, clock=lambda: DEMO_NOW)
    return TestClient(app, base_url=f"http://{host}:8765", follow_redirects=False)


def ids(store, model) -> list[int]:
    with store.session() as s:
        return list(s.execute(select(model.id)).scalars())


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.mark.parametrize("host", ["127.0.0.1", "192.168.1.20"])
def test_every_route_needs_a_persons_token_even_on_loopback(household, host):
    settings, store = household
    with client(settings, store, host) as c:
        for path in ("/api/meters", "/api/status", "/api/recommendation", "/api/events"):
            assert c.get(path).status_code == 401, path
        assert c.get("/").status_code == 401


def test_each_token_reads_only_its_persons_data_route_by_route(household):
    settings, store = household
    me_token = ensure_access_token(settings)
    ana_token = ensure_access_token(settings.for_person("ana"))
    assert me_token != ana_token
    (ana_rec,) = ids(store.as_person("ana"), Recommendation)
    me_recs = ids(store, Recommendation)
    with client(settings, store) as c:
        as_me, as_ana = bearer(me_token), bearer(ana_token)
        me_events = c.get("/api/events", headers=as_me).json()["events"]
        ana_events = c.get("/api/events", headers=as_ana).json()["events"]
        assert ANA_TITLE not in json.dumps(me_events)
        assert ANA_TITLE not in json.dumps(c.get("/api/history", headers=as_me).json())
        assert me_events != ana_events
        for path in ("/api/meters", "/api/status", "/api/feedback", "/api/history"):
            mine, hers = c.get(path, headers=as_me), c.get(path, headers=as_ana)
            assert mine.status_code == hers.status_code == 200, path
            assert mine.json() != hers.json(), path  # the demo week is me's, not ana's
        page = c.get("/", headers=as_ana)
        assert page.status_code == 200 and ANA_TITLE in page.text
        assert ANA_TITLE not in c.get("/", headers=as_me).text
        assert ANA_TITLE not in c.get("/history", headers=as_me).text

        # Another person's recommendation or event is not there at all: 404, nothing written.
        r = c.post(
            "/api/feedback",
            json={"recommendation_id": me_recs[0], "response": "accept"},
            headers=as_ana,
        )
        assert r.status_code == 404
        me_event = ids(store, CalendarEvent)[0]
        r = c.post(f"/api/events/{me_event}/label", json={"action": "EXERCISE"}, headers=as_ana)
        assert r.status_code == 404
        r = c.post(
            "/api/feedback",
            json={"recommendation_id": ana_rec, "response": "accept"},
            headers=as_me,
        )
        assert r.status_code == 404
        r = c.post(
            "/api/feedback",
            json={"recommendation_id": ana_rec, "response": "accept"},
            headers=as_ana,
        )
        assert r.status_code in (200, 201), r.text
    with store.as_person("ana").session() as s:
        assert s.execute(select(func.count()).select_from(Feedback)).scalar_one() == 1


def test_signing_in_with_a_token_is_signing_in_as_its_person(household):
    settings, store = household
    ana_token = ensure_access_token(settings.for_person("ana"))
    ensure_access_token(settings)
    with client(settings, store) as c:
        r = c.post("/login", data={"token": ana_token})
        assert r.status_code == 303
        page = c.get("/")
        assert page.status_code == 200 and ANA_TITLE in page.text
        assert c.post("/login", data={"token": "not a token"}).status_code == 401


def test_feeds_and_pushes_go_to_their_tokens_person(household):
    settings, store = household
    ensure_access_token(settings)
    ana_settings = settings.for_person("ana")
    ensure_access_token(ana_settings)
    me_feed, ana_feed = ensure_feed_token(settings), ensure_feed_token(ana_settings)
    device = create_token(ana_settings, "ana-iphone")
    before = store.count(Reading)
    body = (PUSH_BODY / "v2_day_constructed.json").read_bytes()
    with client(settings, store) as c:
        assert c.get(f"/calendar/{me_feed}.ics").status_code == 200
        assert c.get(f"/calendar/{ana_feed}.ics").status_code == 200
        assert c.get("/calendar/nobodys-token.ics").status_code == 404
        r = c.post("/api/push/health-auto-export", content=body, headers=bearer(device))
        assert r.status_code == 200, r.text
        assert r.json()["stored"] > 0
    assert store.count(Reading) == before  # me has nothing new
    assert store.as_person("ana").count(Reading) == r.json()["stored"]


def test_one_persons_revoked_token_leaves_the_other_signed_in(household):
    settings, store = household
    me_token = ensure_access_token(settings)
    ana_token = ensure_access_token(settings.for_person("ana"))
    ensure_access_token(settings.for_person("ana"), rotate=True)
    with client(settings, store) as c:
        assert c.get("/api/status", headers=bearer(ana_token)).status_code == 401
        assert c.get("/api/status", headers=bearer(me_token)).status_code == 200


def test_the_household_admin_lists_people_and_reads_nobodys_data(household):
    from bridge.auth.access import ensure_admin_token

    settings, store = household
    me_token = ensure_access_token(settings)
    admin = ensure_admin_token(settings)
    assert admin != me_token
    with client(settings, store) as c:
        r = c.get("/api/people", headers=bearer(admin))
        assert r.status_code == 200 and r.json() == {"people": ["ana", "me"]}
        for path in ("/api/meters", "/api/status", "/api/history", "/api/events", "/"):
            assert c.get(path, headers=bearer(admin)).status_code == 401, path
        assert c.get("/api/people", headers=bearer(me_token)).status_code == 401
        assert c.get("/api/people").status_code == 401


NTFY = "https://ntfy.example.org"
CALLBACK = "http://192.168.1.20:8765"


def _tap(c: TestClient, action: dict, **change: str):
    """What the ntfy app sends when a button is tapped: the action's request, as is."""
    import httpx

    headers = {**action["headers"], **change}
    path = httpx.URL(action["url"]).path
    return c.request(action["method"], path, headers=headers, content=action["body"])


def _checkins(store) -> list[tuple[str, float, str]]:
    from bridge.store.models import CheckIn

    with store.session() as s:
        return sorted((r.item, r.value, r.source) for r in s.execute(select(CheckIn)).scalars())


def test_each_person_is_asked_on_their_own_topic_and_their_buttons_write_only_their_checkin(
    household,
):
    """[notify] checkin_at per person: each gets their own ntfy question, and a tap on a
    button records a check-in through the real app for that person and nobody else."""
    import httpx
    import respx

    from bridge.config import NotifySettings, PersonSettings
    from bridge.out.notify import notify_checkin

    settings, store = household
    asked = dict(ntfy_server=NTFY, callback_url=CALLBACK, checkin_at="08:30")
    settings = settings.model_copy(
        update={
            "notify": NotifySettings(ntfy_topic="me-rhythm", **asked),
            "people": {"ana": PersonSettings(notify=NotifySettings(ntfy_topic="ana-q", **asked))},
        }
    )
    me, ana = (settings, store), (settings.for_person("ana"), store.as_person("ana"))
    with respx.mock as router:
        route = router.post(f"{NTFY}/").mock(return_value=httpx.Response(200))
        for theirs, their_store in (me, ana):
            assert notify_checkin(their_store, theirs, DEMO_NOW) == {"ntfy": "sent"}
        bodies = [json.loads(call.request.content) for call in route.calls]
    assert [b["topic"] for b in bodies] == ["me-rhythm", "ana-q"]
    (me_low, _, _), (_, _, ana_high) = (b["actions"] for b in bodies)
    me_token = me_low["headers"]["Authorization"]
    assert me_token != ana_high["headers"]["Authorization"]
    with client(settings, store) as c:
        assert _tap(c, me_low).status_code == 201
        done = _tap(c, ana_high)
        assert done.status_code == 201
        assert done.json() == {"local_date": "2026-11-19", "slot": 0, "answers": {"energy": 4}}
        # The check-in token opens nothing else: not the page, not the API, not feedback.
        for method, path in (("GET", "/"), ("GET", "/api/meters"), ("POST", "/api/feedback")):
            refused = c.request(method, path, headers={"authorization": me_token})
            assert refused.status_code in (401, 303), path
        # A made-up or altered token writes nothing.
        forged = _tap(c, me_low, Authorization=me_token[:-4] + "0000")
        assert forged.status_code == 401
        bad = _tap(c, {**me_low, "body": '{"energy": 9}'})
        assert bad.status_code == 400
    assert _checkins(store) == [("energy", 2.0, "ntfy")]
    assert _checkins(store.as_person("ana")) == [("energy", 4.0, "ntfy")]
    # A person's own access token works on the same route (their page, a script).
    with client(settings, store) as c:
        token = ensure_access_token(settings.for_person("ana"))
        by_access = c.post("/api/checkin", json={"mood": 3}, headers=bearer(token))
        assert by_access.status_code == 201
        assert c.post("/api/checkin", json={"mood": 3}).status_code == 401
    assert _checkins(store.as_person("ana")) == [("energy", 4.0, "ntfy"), ("mood", 3.0, "api")]
    assert _checkins(store) == [("energy", 2.0, "ntfy")]


# Every route of the page, and the test that shows it serves only its token's person.
# A new route must be placed here (the test below fails otherwise).
ROUTES = {
    "/": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/history": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/meters": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/history": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/feedback": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/events": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/events/{event_id}/label": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/status": "test_each_token_reads_only_its_persons_data_route_by_route",
    "/api/recommendation": "test_the_other_routes_serve_only_their_person",
    "/api/questions": "test_the_other_routes_serve_only_their_person",
    "/validity": "test_the_other_routes_serve_only_their_person",
    "/checkin": "test_the_other_routes_serve_only_their_person",
    "/feedback": "test_the_other_routes_serve_only_their_person",
    "/events/{event_id}/label": "test_the_other_routes_serve_only_their_person",
    "/questions": "test_the_other_routes_serve_only_their_person",
    "/api/checkin": "test_each_person_is_asked_on_their_own_topic_and_their_buttons_...",
    "/login": "test_signing_in_with_a_token_is_signing_in_as_its_person",
    "/logout": "test_signing_in_with_a_token_is_signing_in_as_its_person",
    "/calendar/{token}.ics": "test_feeds_and_pushes_go_to_their_tokens_person",
    "/api/push/health-auto-export": "test_feeds_and_pushes_go_to_their_tokens_person",
    "/api/push/shortcut": "test_feeds_and_pushes_go_to_their_tokens_person",
    "/api/people": "test_the_household_admin_lists_people_and_reads_nobodys_data",
    "/healthz": "public, no person's data",
    "/static": "public, the page's own files",
}


def test_every_route_is_placed_in_an_isolation_test(household):
    settings, store = household
    app = create_app(settings, store, host="192.168.1.20", clock=lambda: DEMO_NOW)
    assert {route.path for route in app.routes} == set(ROUTES)


def test_the_other_routes_serve_only_their_person(household):
    from bridge.store.models import CheckIn, ClassifierCorrection

    settings, store = household
    me_token = ensure_access_token(settings)
    ana_token = ensure_access_token(settings.for_person("ana"))
    (ana_rec,) = ids(store.as_person("ana"), Recommendation)
    me_rec = ids(store, Recommendation)[0]
    me_event = ids(store, CalendarEvent)[0]
    with store.session() as s:
        me_titles = set(s.execute(select(CalendarEvent.title)).scalars())

    def mine() -> tuple[list[int], list[int], list[int]]:
        return ids(store, CheckIn), ids(store, ClassifierCorrection), ids(store, Feedback)

    before = mine()
    with client(settings, store) as c:
        as_me, as_ana = bearer(me_token), bearer(ana_token)
        hers = c.get("/api/recommendation", headers=as_ana).json()["recommendation"]
        his = c.get("/api/recommendation", headers=as_me).json()["recommendation"]
        assert hers["id"] == ana_rec and his["id"] == me_rec
        asked = c.get("/api/questions?n=50", headers=as_ana)
        assert asked.status_code == 200
        assert not me_titles & {q["title"] for q in asked.json()["questions"]}
        assert c.get("/validity", headers=as_ana).status_code == 200
        # ana's writes land in ana's rows; me's ids are not found.
        title = sorted(me_titles)[0]
        r = c.post("/api/questions", json={"title": title, "action": "EXERCISE"}, headers=as_ana)
        assert r.status_code == 200, r.text
        r = c.post("/questions", data={"title": title, "action": "SLEEP"}, headers=as_ana)
        assert r.status_code == 303, r.text
        r = c.post("/checkin", data={"energy": "2"}, headers=as_ana)
        assert r.status_code == 303, r.text
        r = c.post(
            "/feedback", data={"recommendation_id": me_rec, "response": "accept"}, headers=as_ana
        )
        assert r.status_code == 404
        r = c.post(f"/events/{me_event}/label", data={"action": "EXERCISE"}, headers=as_ana)
        assert r.status_code == 404
    assert mine() == before
    ana = store.as_person("ana")
    assert ids(ana, CheckIn) and ids(ana, ClassifierCorrection)
