"""The page and the JSON API through the ASGI test client: content, answers, security."""

from __future__ import annotations

import json
import re
from html import escape, unescape

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from bridge.auth.access import ensure_access_token
from bridge.store.models import CalendarEvent, Feedback, Recommendation
from bridge.web.access import COOKIE, csrf_token
from bridge.web.app import create_app
from bridge.web.words import readable
from mappings.actions import METERS
from tests.conftest import DEMO_NOW

LAN = "192.168.1.20"


def client(settings, store, host="127.0.0.1", **kw) -> TestClient:
    app = create_app(settings, store, host=host, clock=lambda: DEMO_NOW)
    base = "http://127.0.0.1:8765" if host == "127.0.0.1" else f"http://{LAN}:8765"
    return TestClient(app, base_url=base, follow_redirects=False, **kw)


def page_csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([0-9a-f]+)"', html).group(1)


def rec_id(store) -> int:
    with store.session() as s:
        return s.execute(select(Recommendation.id)).scalars().first()


def feedback_rows(store) -> list[Feedback]:
    with store.session() as s:
        return list(s.execute(select(Feedback)).scalars())


def test_the_page_shows_meters_trends_recommendation_events_history_and_sources(
    demo, memory_keyring
):
    settings, store = demo
    with store.session() as sess:
        stored = sess.get(Recommendation, rec_id(store))
    with client(settings, store) as c:
        r = c.get("/")
    assert r.status_code == 200
    html = r.text
    for m in METERS:
        assert f'data-meter="{m}"' in html
    assert html.count('<svg class="trend"') == 5
    assert "<polyline" in html  # a week of demo data draws lines
    # The demo's runner is the default bundled model: its action (ADMIN_WORK with model
    # version 4; the other tests read it from the store, so a new model changes only this
    # line), rationale and belief are shown.
    assert stored.action == "ADMIN_WORK"
    assert '<p class="action" data-testid="rec-action">Admin work</p>' in html
    assert escape(readable(stored.rationale)) in html
    assert stored.belief != "null" and "unknown (this runner keeps no belief)" not in html
    assert "Gym - 7am" in html and "Team standup" in html
    assert 'value="accepted"' in html and 'value="ignored"' in html
    assert 'value="rescheduled"' in html
    assert "apple_health" in html and "Recent answers" in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"


def test_the_api_documents_the_same_state(demo, memory_keyring):
    settings, store = demo
    with client(settings, store) as c:
        meters = c.get("/api/meters").json()
        rec = c.get("/api/recommendation").json()["recommendation"]
        events = c.get("/api/events").json()
        status = c.get("/api/status").json()
        history = c.get("/api/feedback").json()["history"]
        assert c.get("/api/meters?days=40").status_code == 400
        assert c.get("/api/meters?days=x").status_code == 400
    assert meters["date"] == "2026-11-19" and meters["slot_name"] == "morning"
    assert set(METERS) <= set(meters["current"])
    assert 1 < len(meters["history"]) <= 28
    with store.session() as sess:
        assert rec["action"] == sess.get(Recommendation, rec_id(store)).action
    assert rec["response"] is None
    assert len(rec["belief"]) == 3 and all(0 <= b <= 1 for b in rec["belief"])
    assert events["date"] == "2026-11-19"
    assert all(isinstance(e["id"], int) for e in events["events"])
    assert "database" not in status and {s["source"] for s in status["sources"]} >= {"ics"}
    assert [h["id"] for h in history] == [rec["id"]]


def test_accept_through_the_api_is_recorded_once(demo, memory_keyring):
    settings, store = demo
    rid = rec_id(store)
    with client(settings, store) as c:
        token = page_csrf(c.get("/").text)
        first = c.post(
            "/api/feedback",
            json={"recommendation_id": rid, "response": "accept"},
            headers={"X-CSRF-Token": token},
        )
        again = c.post(
            "/api/feedback",
            json={"recommendation_id": rid, "response": "ignore"},
            headers={"X-CSRF-Token": token},
        )
        shown = c.get("/api/recommendation").json()["recommendation"]
    assert first.status_code == 201 and first.json()["created"] is True
    assert first.json()["response"] == "accepted" and first.json()["channel"] == "web"
    assert again.status_code == 200 and again.json() | {"answered_at": None} == {
        "recommendation_id": rid,
        "response": "accepted",
        "channel": "web",
        "created": False,
        "answered_at": None,
        "next": None,
    }
    assert shown["response"] == "accepted" and shown["channel"] == "web"
    rows = feedback_rows(store)
    assert [(f.recommendation_id, f.response, f.channel) for f in rows] == [
        (rid, "accepted", "web")
    ]


def test_the_buttons_work_without_javascript(demo, memory_keyring):
    settings, store = demo
    rid = rec_id(store)
    with client(settings, store) as c:
        token = page_csrf(c.get("/").text)
        r = c.post(
            "/feedback",
            data={"csrf_token": token, "recommendation_id": str(rid), "response": "rescheduled"},
        )
        assert r.status_code == 303 and r.headers["location"].startswith("/?done=rescheduled")
        page = c.get(r.headers["location"]).text
        twice = c.post(
            "/feedback",
            data={"csrf_token": token, "recommendation_id": str(rid), "response": "accepted"},
        )
    assert "Answered: <strong>rescheduled</strong> via web" in page
    assert "Recorded: rescheduled." in page
    assert twice.headers["location"].startswith("/?done=already")
    assert [f.response for f in feedback_rows(store)] == ["rescheduled"]


def test_the_card_shows_its_answer_and_the_rescheduled_window(demo, memory_keyring):
    """Issue 41 item 5: answered elsewhere (the CLI), the card says so, shows the window the
    Reschedule proposed, and no longer says "no answers yet"."""
    from bridge.cycle.answer import answer

    settings, store = demo
    rid = rec_id(store)
    with client(settings, store) as c:
        before = c.get("/").text
        assert "no answers yet" in before and "Rescheduled to" not in before
        _, _, proposal = answer(store, settings, rid, "reschedule", DEMO_NOW, channel="cli")
        assert proposal is not None
        page = c.get("/").text
        api = c.get("/api/recommendation").json()["recommendation"]
    card = page.split('id="recommendation"')[1].split("</section>")[0]
    assert "Answered: <strong>rescheduled</strong> via cli" in card
    assert 'data-testid="rec-rescheduled">Rescheduled to:' in card
    start = proposal.window_start.astimezone(settings.tz).strftime("%H:%M")
    assert start in card.split("Rescheduled to:")[1]
    assert "no answers yet" not in card and "made before your first answer" in card
    assert api["rescheduled_to"]["id"] == proposal.id


@pytest.mark.parametrize("sent", [None, "0" * 64, "not-hex"])
def test_a_missing_or_wrong_csrf_token_is_refused(demo, memory_keyring, sent):
    settings, store = demo
    rid = rec_id(store)
    headers = {"X-CSRF-Token": sent} if sent else {}
    with client(settings, store) as c:
        api = c.post(
            "/api/feedback", json={"recommendation_id": rid, "response": "accept"}, headers=headers
        )
        form = c.post(
            "/feedback",
            data={"csrf_token": sent or "", "recommendation_id": str(rid), "response": "accepted"},
        )
    assert api.status_code == 403 and "CSRF" in api.json()["error"]
    assert form.status_code == 403
    assert feedback_rows(store) == []


def test_unknown_recommendation_is_404_and_bad_input_400(demo, memory_keyring):
    settings, store = demo
    with client(settings, store) as c:
        h = {"X-CSRF-Token": page_csrf(c.get("/").text)}
        unknown = c.post(
            "/api/feedback", json={"recommendation_id": 999, "response": "accept"}, headers=h
        )
        form = c.post(
            "/feedback",
            data={
                "csrf_token": h["X-CSRF-Token"],
                "recommendation_id": "999",
                "response": "accepted",
            },
        )
        bad = c.post(
            "/api/feedback",
            json={"recommendation_id": rec_id(store), "response": "maybe"},
            headers=h,
        )
        not_int = c.post(
            "/api/feedback", json={"recommendation_id": "1", "response": "accept"}, headers=h
        )
        not_json = c.post("/api/feedback", content=b"{", headers=h)
        channel = c.post(
            "/api/feedback",
            json={"recommendation_id": rec_id(store), "response": "accept", "channel": "calendar"},
            headers=h,
        )
    assert unknown.status_code == 404 and "999" in unknown.json()["error"]
    assert form.status_code == 404 and "no recommendation with id 999" in form.text
    assert bad.status_code == 400 and "accept, ignore or reschedule" in bad.json()["error"]
    assert not_int.status_code == 400 and not_json.status_code == 400
    assert channel.status_code == 400
    assert feedback_rows(store) == []


def test_a_label_can_be_corrected(demo, memory_keyring):
    settings, store = demo
    with client(settings, store) as c:
        h = {"X-CSRF-Token": page_csrf(c.get("/").text)}
        ev = next(e for e in c.get("/api/events").json()["events"] if e["title"] == "Team standup")
        r = c.post(f"/api/events/{ev['id']}/label", json={"action": "DEEP_WORK"}, headers=h)
        form = c.post(
            f"/events/{ev['id']}/label",
            data={"csrf_token": h["X-CSRF-Token"], "action": "LEARN"},
        )
        after = next(e for e in c.get("/api/events").json()["events"] if e["id"] == ev["id"])
        unknown = c.post("/api/events/99999/label", json={"action": "LEARN"}, headers=h)
        bad = c.post(f"/api/events/{ev['id']}/label", json={"action": "NAP"}, headers=h)
        no_csrf = c.post(f"/api/events/{ev['id']}/label", json={"action": "SLEEP"})
    assert r.status_code == 200 and r.json() == {
        "id": ev["id"],
        "action": "DEEP_WORK",
        "layer": "user",
        "changed": True,
    }
    assert form.status_code == 303
    assert after["action"] == "LEARN" and after["layer"] == "user"
    assert unknown.status_code == 404 and bad.status_code == 400 and no_csrf.status_code == 403
    with store.session() as s:
        assert s.get(CalendarEvent, ev["id"]).action == "LEARN"
    # The page's label is a classifier correction: it wins for every "Team standup" now.
    from bridge.cycle.classify import build_classifier
    from bridge.learning.corrections import corrections

    (fix,) = corrections(store)
    assert (fix.title, fix.action, fix.channel) == ("Team standup", "LEARN", "web")
    result = build_classifier(settings, store).classify("team standup")
    assert (result.action, result.layer) == ("LEARN", "override")


def test_a_loopback_page_refuses_foreign_host_names(demo, memory_keyring):
    settings, store = demo
    with client(settings, store) as c:
        r = c.get("/api/meters", headers={"Host": "evil.example:8765"})
        ok = c.get("/api/meters", headers={"Host": "localhost:8765"})
    assert r.status_code == 400 and ok.status_code == 200


def test_a_lan_bind_needs_the_access_token(demo, memory_keyring):
    settings, store = demo
    token = ensure_access_token(settings)
    rid = rec_id(store)
    with client(settings, store, host="0.0.0.0") as c:
        assert c.get("/api/meters").status_code == 401
        assert c.get("/api/meters").headers["www-authenticate"].startswith("Bearer")
        page = c.get("/")
        assert page.status_code == 401 and 'action="/login"' in page.text
        assert c.get("/api/meters", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.get("/static/app.css").status_code == 200
        assert c.get("/healthz").status_code == 200
        no_token = c.post("/api/feedback", json={"recommendation_id": rid, "response": "accept"})
        assert no_token.status_code == 401
        wrong = c.post("/login", data={"token": "guess"})
        assert wrong.status_code == 401 and COOKIE not in wrong.cookies
        login = c.post("/login", data={"token": token})
        assert login.status_code == 303
        assert "httponly" in login.headers["set-cookie"].lower()
        assert "samesite=strict" in login.headers["set-cookie"].lower()
        c.cookies.set(COOKIE, token)
        home = c.get("/")
        assert home.status_code == 200
        # a cookie alone cannot change anything: the page's CSRF token is needed too
        no_csrf = c.post("/api/feedback", json={"recommendation_id": rid, "response": "accept"})
        assert no_csrf.status_code == 403
        c.cookies.clear()
        bearer = c.post(
            "/api/feedback",
            json={"recommendation_id": rid, "response": "accept", "channel": "ntfy"},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert bearer.status_code == 201 and bearer.json()["channel"] == "ntfy"
    assert page_csrf(home.text) == csrf_token(token) != token


def test_no_page_or_api_response_contains_a_secret(demo, memory_keyring):
    from bridge.out.notify import set_ntfy_token

    settings, store = demo
    token = ensure_access_token(settings)
    set_ntfy_token(settings, "ntfy-secret-123")
    bodies = []
    with client(settings, store, host="0.0.0.0") as c:
        bodies.append(c.get("/").text)  # the login page
        bodies.append(c.get("/login").text)
        bodies.append(c.post("/login", data={"token": "wrong"}).text)
        c.cookies.set(COOKIE, token)
        for path in (
            "/",
            "/api/meters",
            "/api/recommendation",
            "/api/events",
            "/api/status",
            "/api/feedback",
            "/static/app.js",
            "/api/nothing",
            "/?done=%3Cscript%3E",
        ):
            r = c.get(path)
            bodies.append(r.text + str(dict(r.headers)))
    for body in bodies:
        assert token not in body
        assert "ntfy-secret-123" not in body
        assert "<script>" not in body


def test_a_lan_bind_without_a_keyring_is_one_clear_error(demo):
    import keyring
    import keyring.core
    from keyring.backends.fail import Keyring as FailKeyring

    from bridge.errors import ConfigError

    settings, store = demo
    before = keyring.core._keyring_backend
    keyring.set_keyring(FailKeyring())
    try:
        with pytest.raises(ConfigError, match="keyring"):
            create_app(settings, store, host="0.0.0.0")
        app = create_app(settings, store, host="127.0.0.1", clock=lambda: DEMO_NOW)
        with TestClient(app, base_url="http://127.0.0.1") as c:
            assert c.get("/").status_code == 200
    finally:
        keyring.core._keyring_backend = before


def test_a_runner_without_a_belief_shows_unknown(demo, memory_keyring):
    settings, store = demo
    with store.transaction() as s:
        s.get(Recommendation, rec_id(store)).belief = "null"  # e.g. the heuristic runner
    with client(settings, store) as c:
        html = c.get("/").text
        rec = c.get("/api/recommendation").json()["recommendation"]
    assert "unknown (this runner keeps no belief)" in html and rec["belief"] is None


def test_a_belief_is_shown_per_axis_and_a_reauth_shows_its_command(demo, memory_keyring):
    from bridge.store import upsert
    from bridge.store.models import SyncState

    settings, store = demo
    with store.transaction() as s:
        s.get(Recommendation, rec_id(store)).belief = "[0.2, 0.8, 0.55]"
        upsert(
            s,
            SyncState,
            [
                {
                    "source": "ics",
                    "stream": "",
                    "partition": "",
                    "status": "reauth_required",
                    "last_error": "token expired",
                }
            ],
            keys=("source", "stream", "partition"),
        )
    with client(settings, store) as c:
        html = c.get("/").text
        status = c.get("/api/status").json()
    assert "unknown (this runner keeps no belief)" not in html
    for axis, value in (("social", "0.20"), ("morning", "0.80"), ("work", "0.55")):
        assert re.search(
            rf"<dt>{axis}( <span[^<]*</span>)?</dt><dd><meter[^>]*>{value}</meter>", html
        )
    assert "Action needed: run <code>rhythm-bridge auth ics</code>" in html
    ics = next(x for x in status["sources"] if x["source"] == "ics")
    assert ics["action_needed"] == "rhythm-bridge auth ics"


def test_the_page_says_in_words_what_its_numbers_mean(demo, memory_keyring):
    """Issue 41 item 8: each meter's meaning and which way is good, confidence in words,
    human action names, the belief explained, labels as sure/unsure, local times."""
    from bridge.web.words import METER_MEANINGS

    settings, store = demo
    with store.transaction() as s:
        store.set_meta(s, "last_cycle_at", "2026-11-19T07:25:55.562107+00:00")
    with client(settings, store) as c:
        html = c.get("/").text
    for m in METERS:
        line = re.search(rf'data-testid="meaning-{m}">([^<]+)<', html).group(1)
        assert unescape(line) == METER_MEANINGS[m] and "Higher is better" in line
        word = re.search(rf'data-testid="confidence-{m}">confidence <strong>(\w+)</strong>', html)
        assert word and word.group(1) in ("high", "medium", "low")
    text = re.sub(r"<[^>]+>", " ", html.split("<script")[0])  # what a person reads
    assert "_WORK" not in text and "NOT_AN_ACTION" not in text and "UNCLASSIFIED" not in text
    assert "P(accept)" not in text
    assert '<option value="DEEP_WORK">Deep work</option>' in html
    assert 'data-testid="belief-line">Learnt from your answers' in html
    assert "introvert ↔ extrovert" in html
    hows = re.findall(r'data-testid="label-how"[^>]*>([^<]+)<', html)
    assert hows and all(re.fullmatch(r"[a-zA-Z' ]+(, (sure|unsure))?", h) for h in hows), hows
    assert "rules 0.90" not in text and "by a rule, sure" in text
    # Times in the person's zone (Berlin, UTC+1), never a raw ISO instant.
    assert "Last cycle: <time" in html and "Thu 19 Nov 08:25</time>" in html
    assert "+00:00<" not in html and not re.search(r">\d{4}-\d\d-\d\dT", html)


def test_the_trend_line_breaks_where_a_slot_has_no_value():
    from bridge.web.charts import sparkline

    svg = str(sparkline([0.1, 0.2, None, 0.5, 0.6, 0.7, None, 0.9], "vitality"))
    assert svg.count("<polyline") == 2  # two runs of two or more points
    assert svg.count('class="pt"') == 1  # the lone last point
    assert 'aria-label="vitality, last 8 slots: lowest 0.10, highest 0.90, latest 0.90"' in svg
    empty = str(sparkline([None] * 4, "serenity"))
    assert "<polyline" not in empty and "no values in the last 7 days" in empty


def test_every_api_route_is_documented_in_the_http_api_reference(demo, memory_keyring):
    from pathlib import Path

    settings, store = demo
    page = (Path(__file__).parents[2] / "docs" / "reference" / "http-api.md").read_text()
    app = create_app(settings, store, host="127.0.0.1")
    api = [r for r in app.routes if getattr(r, "path", "").startswith("/api/")]
    assert len(api) == 10
    for route in api:
        for method in sorted(route.methods - {"HEAD"}):
            assert f"`{method} {route.path}" in page, (
                f"{method} {route.path} is not in docs/reference/http-api.md"
            )


def test_an_axis_the_model_is_unsure_of_says_not_sure_yet(demo, memory_keyring):
    from bridge.web.views import UNSURE_SD

    settings, store = demo
    with store.session() as s:
        row = s.get(Recommendation, rec_id(store))
    stored = json.loads(row.belief_sd)  # the demo's bundled runner states it
    assert len(stored) == 3 and all(0.0 <= x <= 0.5 for x in stored)
    with store.transaction() as s:
        row = s.get(Recommendation, rec_id(store))
        row.belief = "[0.2, 0.8, 0.55]"
        row.belief_sd = json.dumps([UNSURE_SD + 0.1, UNSURE_SD - 0.1, UNSURE_SD + 0.01])
    with client(settings, store) as c:
        html = c.get("/").text
    rows = re.findall(r"<dt>(\w+)(?: <span[^<]*</span>)?</dt><dd>(.*?)</dd>", html)
    unsure = {axis for axis, body in rows if "not sure yet" in body}
    assert unsure == {"social", "work"}
    assert "± 0.25" in html and "± 0.05" in html
    with store.transaction() as s:
        s.get(Recommendation, rec_id(store)).belief_sd = None  # e.g. a runner without one
    with client(settings, store) as c:
        assert "not sure yet" not in c.get("/").text


def test_the_page_shows_imported_sources_as_imported_not_disabled(demo):
    """The demo imports an Apple export and a calendar file without scheduling them: the
    page says they hold data, with their last import, as `status` does."""
    settings, store = demo
    with client(settings, store) as c:
        html = c.get("/").text
    apple = re.search(r'data-testid="source-apple_health">([^<]*)<', html)
    assert apple and apple.group(1) == "imported"
    assert re.search(r'data-testid="source-whoop">disabled<', html)


def test_the_checkin_form_stores_answers_and_the_validity_page_reports_on_them(
    demo, memory_keyring
):
    from bridge.store.models import CheckIn

    settings, store = demo
    with client(settings, store) as c:
        page = c.get("/")
        assert 'data-testid="checkin-form"' in page.text
        csrf = page_csrf(page.text)
        done = c.post(
            "/checkin", data={"csrf_token": csrf, "energy": "4", "stress": "", "mood": "2"}
        )
        assert done.status_code == 303 and done.headers["location"] == "/?done=checkin#checkin"
        again = c.post("/checkin", data={"csrf_token": csrf, "energy": "5"})
        assert again.status_code == 303
        bad = c.post("/checkin", data={"csrf_token": csrf, "energy": "9"})
        assert bad.status_code == 400
        no_csrf = c.post("/checkin", data={"energy": "3"})
        assert no_csrf.status_code in (400, 403)
        report = c.get("/validity")
    with store.session() as s:
        rows = {r.item: (r.value, r.source) for r in s.execute(select(CheckIn)).scalars()}
    assert rows == {"energy": (5.0, "web"), "mood": (2.0, "web")}  # the second replaced
    assert report.status_code == 200
    assert "paired days so far; a number needs 14" in unescape(report.text)


def test_a_meter_made_with_fitted_weights_says_so_on_the_page(demo, memory_keyring):
    from bridge.store.models import MeterSnapshot

    settings, store = demo
    with store.transaction() as s:
        rows = list(s.execute(select(MeterSnapshot)).scalars())
        for row in rows:
            prov = json.loads(row.provenance)
            if "inputs" in prov["vitality"]:
                prov["vitality"]["weights"] = "fitted to you"
            row.provenance = json.dumps(prov)
    with client(settings, store) as c:
        html = c.get("/").text
    assert 'data-testid="fitted-vitality"' in html
    assert 'data-testid="fitted-cognition"' not in html


def test_questions_are_listed_and_answered_with_one_tap(demo, memory_keyring):
    from datetime import timedelta

    from bridge.store.models import CalendarEvent
    from tests.conftest import DEMO_NOW

    settings, store = demo
    with store.transaction() as session:
        for day in range(-14, 7, 7):  # a weekly event nothing knows, one retitled
            start = DEMO_NOW + timedelta(days=day, hours=-2)
            session.add(
                CalendarEvent(
                    source="ics",
                    calendar_id="/cal/me.ics",
                    uid="ploof",
                    recurrence_id=start.isoformat(),
                    title="Ploof 18:00" if day == 0 else "Ploof",
                    start_utc=start,
                    end_utc=start + timedelta(minutes=600),
                    content_hash=str(day),
                    updated_at=DEMO_NOW,
                )
            )
    with client(settings, store) as c:
        page = c.get("/").text
        h = {"X-CSRF-Token": page_csrf(page)}
        listed = c.get("/api/questions?n=1").json()["questions"]
        bad_n = c.get("/api/questions?n=0")
        form = c.post(
            "/questions",
            data={"csrf_token": h["X-CSRF-Token"], "title": "Ploof", "action": "EXERCISE"},
        )
        after = c.get("/api/questions?n=50").json()["questions"]
        page_after = c.get("/").text
        api = c.post("/api/questions", json={"title": "Ploof", "action": "SLEEP"}, headers=h)
        no_csrf = c.post("/api/questions", json={"title": "Ploof", "action": "LEARN"})
        bad = c.post("/api/questions", json={"title": "Ploof", "action": "NAP"}, headers=h)
    assert 'id="questions"' in page and "Ploof" in page and 'value="EXERCISE"' in page
    assert listed == [
        {
            "title": "Ploof",
            "minutes": 1800,
            "occurrences": 3,
            "guess": listed[0]["guess"],
            "confidence": listed[0]["confidence"],
        }
    ]
    assert bad_n.status_code == 400
    assert form.status_code == 303 and form.headers["location"] == "/?done=question#questions"
    assert all(q["title"] != "Ploof" for q in after)  # never asked again
    assert "Ploof" not in page_after.split('id="questions"')[-1].split("</section>")[0]
    assert api.status_code == 200 and api.json() == {
        "title": "Ploof",
        "action": "SLEEP",
        "relabelled": 3,
    }
    assert no_csrf.status_code == 403 and bad.status_code == 400


def test_a_checkin_button_works_when_its_token_was_made_after_the_server_started(
    demo, memory_keyring
):
    """The daemon serves the page before its first check-in question makes the access
    token: the check-in route reads it then, and a tap records the check-in."""
    import httpx
    import respx

    from bridge.out.notify import notify_checkin
    from bridge.store.models import CheckIn

    settings, store = demo
    settings = settings.model_copy(
        update={
            "notify": settings.notify.model_copy(
                update={
                    "ntfy_server": "https://ntfy.example.org",
                    "ntfy_topic": "t",
                    "callback_url": "http://127.0.0.1:8765",
                    "checkin_at": "08:30",
                }
            )
        }
    )
    with client(settings, store) as c:  # loopback, one person: no token yet
        with respx.mock as router:
            route = router.post("https://ntfy.example.org/").mock(return_value=httpx.Response(200))
            notify_checkin(store, settings, DEMO_NOW)
        low = json.loads(route.calls.last.request.content)["actions"][0]
        done = c.post("/api/checkin", headers=low["headers"], content=low["body"])
        assert done.status_code == 201
        # Without the token (or the page's CSRF token) the route writes nothing.
        assert c.post("/api/checkin", json={"energy": 5}).status_code == 403
    with store.session() as s:
        rows = [(r.item, r.value, r.source) for r in s.execute(select(CheckIn)).scalars()]
    assert rows == [("energy", 2.0, "ntfy")]
