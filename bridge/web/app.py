"""The Starlette app: the page, its form posts, and the JSON API under /api/.

Library errors become HTTP responses here and nowhere else: an unknown recommendation or
event is 404, bad input 400, a missing or wrong access token 401, a missing or wrong CSRF
token 403.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.auth.access import (
    CHECKIN_PREFIX,
    checkin_token,
    ensure_access_token,
    get_access_token,
    get_admin_token,
)
from bridge.config import Settings
from bridge.cycle.answer import answer
from bridge.errors import BridgeError, InputError
from bridge.learning.corrections import LABELS, UnknownEvent, correct_event_label
from bridge.learning.feedback import UnknownRecommendation
from bridge.out.snapshot import recommendation_document, vendor_score_documents
from bridge.store import Store
from bridge.web import access, push, views, words
from bridge.web.charts import sparkline
from bridge.web.limits import BodyLimit
from mappings.actions import METERS, action_name
from mappings.checkins import ASKED
from mappings.checkins import BY_NAME as CHECKIN_ITEMS

# Questions shown on the page: a few, each answered with one tap.
PAGE_QUESTIONS = 3
# Below this confidence a meter is drawn faded and hatched (page) or dashed (history).
WEAK_CONFIDENCE = 0.5

HERE = Path(__file__).parent
PUBLIC_PREFIXES = ("/static/", "/login", "/healthz")
# The calendar feed carries its own token in its URL (a calendar app cannot sign in) and
# is fetched under whatever name a proxy gives this server.
FEED_PREFIX = "/calendar/"
WEB_CHANNELS = ("web", "ntfy")
SECURITY_HEADERS = {
    # Everything the page needs comes from this server; nothing may frame it.
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
PUSH_PREFIX = push.PUSH_PREFIX
PEOPLE_PATH = "/api/people"
# Also opened by a check-in notification's token (bridge.out.notify), and only this path.
CHECKIN_API = "/api/checkin"
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}


@dataclass
class WebState:
    settings: Settings
    store: Store
    require_token: bool
    token: str | None
    csrf: str
    clock: Callable[[], datetime]

    def now(self) -> datetime:
        return self.clock().astimezone(UTC)

    def bearer(self, request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    def checkin_token(self) -> str | None:
        """The token this person's check-in notifications carry (None without an access
        token); read anew when none was there at start, as the notifier makes one."""
        key = self.token or get_access_token(self.settings)
        return checkin_token(key) if key else None

    def check_write(self, request: Request, form_token: str | None = None) -> None:
        """A state-changing request needs the bearer token or the page's CSRF token."""
        if self.token and access.same(self.bearer(request), self.token):
            return
        sent = request.headers.get("x-csrf-token") or form_token
        if not access.same(sent, self.csrf):
            raise HTTPException(403, "missing or wrong CSRF token; reload the page")


def _host_ok(state: WebState, request: Request) -> bool:
    # Without a token the page trusts the machine; refuse other Host names so a web page
    # elsewhere cannot reach it through DNS rebinding.
    if state.require_token:
        return True
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in LOOPBACK_HOSTS


def _person_of(states: list[WebState], request: Request) -> WebState | None:
    """The person whose token the request carries (bearer or cookie); with a page that
    needs no token (one person, loopback), that one person."""
    first = states[0]
    if not first.require_token:
        return first
    sent = (first.bearer(request), request.cookies.get(access.COOKIE))
    return next((st for st in states if any(access.same(t, st.token) for t in sent)), None)


def _requester(states: list[WebState], request: Request, path: str) -> tuple[WebState | None, bool]:
    """Whom the request is served as, and whether by a check-in token: that token writes
    its one person's check-in (CHECKIN_API) and opens nothing else."""
    sent = states[0].bearer(request)
    if path == CHECKIN_API and sent and sent.startswith(CHECKIN_PREFIX):
        return next((st for st in states if access.same(sent, st.checkin_token())), None), True
    return _person_of(states, request), False


class Guard:
    """Security headers on every response; the access token on every non-public path.

    In a household each person has their own token: the request is served as the person
    whose token it carries (`_state`), so every route reads and changes only their data.
    """

    def __init__(self, app: ASGIApp, states: list[WebState], admin: str | None) -> None:
        self.app, self.states, self.state, self.admin = app, states, states[0], admin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secure(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers[key] = value
            await send(message)

        request = Request(scope)
        path = request.url.path
        if path.startswith(PUSH_PREFIX):  # device tokens, checked by the endpoint itself
            await self.app(scope, receive, send_secure)
            return
        refusal: Response | None = None
        if path.startswith(FEED_PREFIX):
            pass  # checked by calendar_feed against the feed token
        elif not _host_ok(self.state, request):
            refusal = Response("unknown host name", status_code=400, media_type="text/plain")
        elif path.startswith(PUBLIC_PREFIXES):
            pass
        elif path == PEOPLE_PATH:
            # The household admin's one route; a person's token does not open it.
            if not access.same(self.state.bearer(request), self.admin):
                refusal = JSONResponse({"error": "the household admin token is required"}, 401)
        elif (whose := _requester(self.states, request, path))[0] is not None:
            scope.setdefault("state", {}).update(person_state=whose[0], by_checkin_token=whose[1])
        else:
            if path.startswith("/api/"):
                refusal = JSONResponse(
                    {"error": "access token required (cookie or Authorization: Bearer)"},
                    status_code=401,
                    headers={"www-authenticate": 'Bearer realm="rhythm-bridge"'},
                )
            else:
                refusal = RedirectResponse("/login", status_code=303)
                if request.method == "GET":
                    refusal = _login_page(request, status_code=401)
        if refusal is not None:
            await refusal(scope, receive, send_secure)
            return
        await self.app(scope, receive, send_secure)


templates = Jinja2Templates(directory=HERE / "templates")


def _localtime(value: str | None, tz: Any) -> str:
    return datetime.fromisoformat(value).astimezone(tz).strftime("%H:%M") if value else ""


def _localwhen(value: str | None, tz: Any) -> str:
    """Weekday, date and time in the person's zone: the next free window may be days away,
    a source's last success weeks ago. A value that is not a time is shown as it is."""
    if not value:
        return ""
    try:
        return datetime.fromisoformat(value).astimezone(tz).strftime("%a %d %b %H:%M")
    except (TypeError, ValueError):
        return str(value)


templates.env.filters["localtime"] = _localtime
templates.env.filters["localwhen"] = _localwhen
templates.env.filters["action_name"] = action_name
templates.env.filters["confidence_word"] = words.confidence_word
templates.env.filters["label_words"] = words.label_words
templates.env.filters["readable"] = words.readable
templates.env.globals["meter_meanings"] = words.METER_MEANINGS
templates.env.globals["belief_line"] = words.BELIEF_LINE
templates.env.globals["belief_ends"] = words.BELIEF_ENDS


def _state(request: Request) -> WebState:
    """The signed-in person's view (their settings, their store)."""
    return getattr(request.state, "person_state", None) or request.app.state.web


def _everyone(request: Request) -> list[WebState]:
    return request.app.state.people


def _login_page(request: Request, status_code: int = 200, error: str | None = None) -> Response:
    return templates.TemplateResponse(
        request, "login.html", {"error": error}, status_code=status_code
    )


# ---- the page -------------------------------------------------------------------------


def page_view(request: Request) -> Response:
    st = _state(request)
    now = st.now()
    meter_doc = views.meters(st.store, st.settings, now)
    cards = views.meter_cards(meter_doc)
    for card in cards:
        card["chart"] = sparkline(card["series"], card["name"])
        card["weak"] = card["confidence"] is not None and card["confidence"] < WEAK_CONFIDENCE
    rec = views.recommendation(st.store, st.settings, now)
    return templates.TemplateResponse(
        request,
        "page.html",
        {
            "now": now.astimezone(st.settings.tz),
            "tz": st.settings.tz,
            "meters": meter_doc,
            "cards": cards,
            "vendor_scores": vendor_score_documents(st.store, now),
            "rec": rec,
            "no_window": None if rec else views.no_window(st.store, st.settings, now),
            "belief": views.belief_rows(rec["belief"], rec.get("belief_sd")) if rec else None,
            "events": views.events_today(st.store, st.settings, now),
            "questions": _questions(st, now, PAGE_QUESTIONS),
            "labels": LABELS,
            "history": views.interaction_history(st.store, tz=st.settings.tz),
            "status": views.status(st.store, st.settings),
            "csrf": st.csrf,
            "notice": request.query_params.get("done"),
            "proposal": views.proposal(st.store, st.settings, request.query_params.get("next")),
            "require_token": st.require_token,
            "checkin_items": [CHECKIN_ITEMS[k] for k in ASKED],
        },
    )


def _history_asked(request: Request) -> dict[str, Any]:
    """The history document for the range the query asks for (the page and the API)."""
    from bridge.web.history import history

    st = _state(request)
    q = request.query_params
    return history(
        st.store,
        st.settings,
        st.now(),
        range_name=q.get("range"),
        first=q.get("from"),
        last=q.get("to"),
    )


def history_page(request: Request) -> Response:
    from bridge.web.history import RANGE_LABELS
    from bridge.web.history_charts import page_charts

    doc = _history_asked(request)
    return templates.TemplateResponse(
        request,
        "history.html",
        {
            "doc": doc,
            "charts": page_charts(doc, WEAK_CONFIDENCE),
            "ranges": list(RANGE_LABELS.items()),
            "weak_below": WEAK_CONFIDENCE,
            "has_meters": any(r[m] is not None for r in doc["rows"] for m in METERS),
            "captions": {
                "sleep": "Sleep (hours asleep; deep and REM at the bottom)",
                "hrv": "HRV against your baseline band",
                "resting_hr": "Resting heart rate against your baseline band",
                "steps": "Steps",
                "stress": "Stress",
                "calendar_hours": "Calendar load (busy hours)",
            },
        },
    )


async def feedback_form(request: Request) -> Response:
    st = _state(request)
    form = await request.form()
    st.check_write(request, _field(form, "csrf_token"))
    rec_id = _int(_field(form, "recommendation_id"), "recommendation_id")
    response = _field(form, "response") or ""
    fb, created, proposal = answer(st.store, st.settings, rec_id, response, st.now(), channel="web")
    done = fb.response if created else "already"
    more = f"&next={proposal.id}" if proposal is not None and created else ""
    return RedirectResponse(f"/?done={done}{more}#recommendation", status_code=303)


async def checkin_form(request: Request) -> Response:
    from bridge.intake.checkins import parse_answers, record_checkins

    st = _state(request)
    form = await request.form()
    st.check_write(request, _field(form, "csrf_token"))
    pairs = [f"{k}={_field(form, k)}" for k in ASKED if (_field(form, k) or "").strip()]
    answers = parse_answers(pairs)  # InputError: none given, or off the 1-5 scale
    s = st.settings
    record_checkins(st.store, answers, st.now(), s.tz, s.boundaries, source="web")
    return RedirectResponse("/?done=checkin#checkin", status_code=303)


async def api_checkin(request: Request) -> Response:
    """POST {"energy": 4, "stress": 2, ...} (1-5 each, any subset): a check-in now, as the
    page's form stores it. The buttons of the check-in notification call it with the
    person's check-in token; the access token (or the page's CSRF token) works too."""
    from bridge.intake.checkins import parse_answers, record_checkins

    st = _state(request)
    by_button = bool(getattr(request.state, "by_checkin_token", False))
    if not by_button:
        st.check_write(request)
    body = await _json(request)
    for name, value in body.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputError(f"{name}: a number 1-5 is required")
    answers = parse_answers([f"{k}={v}" for k, v in body.items()])
    s = st.settings
    rows = record_checkins(
        st.store, answers, st.now(), s.tz, s.boundaries, source="ntfy" if by_button else "api"
    )
    return JSONResponse(
        {
            "local_date": rows[0]["local_date"].isoformat(),
            "slot": rows[0]["slot"],
            "answers": {row["item"]: row["value"] for row in rows},
        },
        status_code=201,
    )


def validity_page(request: Request) -> Response:
    from bridge.cycle.validity import paired_history, report

    st = _state(request)
    doc = report(paired_history(st.store, st.settings))
    return templates.TemplateResponse(request, "validity.html", {"doc": doc})


async def label_form(request: Request) -> Response:
    st = _state(request)
    form = await request.form()
    st.check_write(request, _field(form, "csrf_token"))
    correct_event_label(
        st.store, _int(request.path_params["event_id"], "event id"), _field(form, "action") or ""
    )
    return RedirectResponse("/?done=label#events", status_code=303)


def _questions(st: WebState, now: datetime, n: int) -> list[dict[str, Any]]:
    from bridge.cycle.questions import calendar_questions

    return [q.as_dict() for q in calendar_questions(st.store, st.settings, now, n)]


def _answer_group(st: WebState, title: str, action: str) -> dict[str, Any]:
    """The person's one-tap answer for a title's whole group, stored and applied at once."""
    from bridge.learning.corrections import add_correction, relabel_answered

    if not title.strip():
        raise InputError("title: the question's title is required")
    fix = add_correction(st.store, title, action, channel="web")
    return {"title": title, "action": fix.action, "relabelled": relabel_answered(st.store, fix)}


async def question_form(request: Request) -> Response:
    st = _state(request)
    form = await request.form()
    st.check_write(request, _field(form, "csrf_token"))
    _answer_group(st, _field(form, "title") or "", _field(form, "action") or "")
    return RedirectResponse("/?done=question#questions", status_code=303)


async def login(request: Request) -> Response:
    st = _state(request)
    if not st.require_token:
        return RedirectResponse("/", status_code=303)
    if request.method == "GET":
        return _login_page(request)
    form = await request.form()
    sent = _field(form, "token")
    st = next((p for p in _everyone(request) if access.same(sent, p.token)), st)
    if not access.same(sent, st.token):
        return _login_page(request, status_code=401, error="That token is not right.")
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        access.COOKIE,
        st.token or "",
        max_age=400 * 24 * 3600,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def logout(request: Request) -> Response:
    st = _state(request)
    form = await request.form()
    st.check_write(request, _field(form, "csrf_token"))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(access.COOKIE)
    return response


def calendar_feed(request: Request) -> Response:
    """The .ics feed of accepted and rescheduled suggestions; 404 unless the token is right."""
    from bridge.auth.feed import get_feed_token
    from bridge.out.calendar_feed import build_feed, etag

    sent = request.path_params.get("token")
    st = next(
        (p for p in _everyone(request) if access.same(sent, get_feed_token(p.settings))), None
    )
    if st is None:
        return Response("not found", status_code=404, media_type="text/plain")
    body = build_feed(st.store, st.now())
    tag = etag(body)
    headers = {"etag": tag}
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/calendar; charset=utf-8", headers=headers)


def healthz(request: Request) -> Response:
    return JSONResponse({"ok": True})


# ---- the JSON API ---------------------------------------------------------------------


def api_meters(request: Request) -> Response:
    st = _state(request)
    days = _int(request.query_params.get("days", str(views.TREND_DAYS)), "days")
    if not 1 <= days <= 31:
        raise InputError("days: use 1 to 31")
    return JSONResponse(views.meters(st.store, st.settings, st.now(), days))


def api_history(request: Request) -> Response:
    """Daily (or weekly, over long ranges) meters, inputs and answers: ?range=4w|3m|1y|all
    or ?from=YYYY-MM-DD&to=YYYY-MM-DD."""
    return JSONResponse(_history_asked(request))


def api_recommendation(request: Request) -> Response:
    st = _state(request)
    now = st.now()
    rec = views.recommendation(st.store, st.settings, now)
    gap = None if rec else views.no_window(st.store, st.settings, now)
    return JSONResponse({"recommendation": rec, "no_window": gap})


async def api_feedback(request: Request) -> Response:
    st = _state(request)
    if request.method == "GET":
        limit = _int(request.query_params.get("limit", str(views.HISTORY_LIMIT)), "limit")
        if not 1 <= limit <= 500:
            raise InputError("limit: use 1 to 500")
        return JSONResponse({"history": views.interaction_history(st.store, limit, st.settings.tz)})
    st.check_write(request)
    body = await _json(request)
    channel = body.get("channel", "web")
    if channel not in WEB_CHANNELS:
        raise InputError(f"channel: use one of {', '.join(WEB_CHANNELS)}")
    rec_id = body.get("recommendation_id")
    if not isinstance(rec_id, int) or isinstance(rec_id, bool):
        raise InputError("recommendation_id: an integer is required")
    fb, created, proposal = answer(
        st.store, st.settings, rec_id, str(body.get("response", "")), st.now(), channel=channel
    )
    return JSONResponse(
        {
            "recommendation_id": rec_id,
            "response": fb.response,
            "channel": fb.channel,
            "created": created,
            "answered_at": fb.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            # A Reschedule proposes the next free window for the same action (or null).
            "next": recommendation_document(proposal, None, st.settings.tz)
            if proposal is not None
            else None,
        },
        status_code=201 if created else 200,
    )


def api_events(request: Request) -> Response:
    st = _state(request)
    now = st.now()
    meter_day = views.meters(st.store, st.settings, now, days=1)["date"]
    return JSONResponse(
        {"date": meter_day, "events": views.events_today(st.store, st.settings, now)}
    )


async def api_label(request: Request) -> Response:
    st = _state(request)
    st.check_write(request)
    body = await _json(request)
    result = correct_event_label(
        st.store, _int(request.path_params["event_id"], "event id"), str(body.get("action", ""))
    )
    return JSONResponse(result)


def api_people(request: Request) -> Response:
    """The people here, for the household admin: names only, nobody's data."""
    return JSONResponse({"people": _state(request).store.people()})


async def api_questions(request: Request) -> Response:
    """GET: the questions, best first (`?n=`, default 5); POST {"title", "action"}: answer
    one for its whole group."""
    st = _state(request)
    if request.method == "POST":
        st.check_write(request)
        body = await _json(request)
        return JSONResponse(
            _answer_group(st, str(body.get("title", "")), str(body.get("action", "")))
        )
    n = _int(request.query_params.get("n", "5"), "n")
    if not 1 <= n <= 50:
        raise InputError("n: between 1 and 50")
    return JSONResponse({"questions": _questions(st, st.now(), n)})


def api_status(request: Request) -> Response:
    st = _state(request)
    return JSONResponse(views.status(st.store, st.settings))


# ---- helpers and errors ---------------------------------------------------------------


def _field(form: Any, name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


def _int(value: Any, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"{name}: an integer is required") from None


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise InputError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise InputError("the request body must be a JSON object")
    return body


def _error(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return templates.TemplateResponse(
        request, "error.html", {"status": status, "message": message}, status_code=status
    )


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(request, exc.status_code, str(exc.detail))


async def _on_bridge(request: Request, exc: Exception) -> Response:
    if isinstance(exc, UnknownRecommendation | UnknownEvent):
        return _error(request, 404, str(exc))
    if isinstance(exc, InputError):
        return _error(request, 400, str(exc))
    return _error(request, 503, str(exc))


def create_app(
    settings: Settings,
    store: Store,
    *,
    host: str | None = None,
    clock: Callable[[], datetime] | None = None,
    page: bool = True,
) -> Starlette:
    """The app for a server bound to `host` (default: the configured one).

    A non-loopback host needs the access token (made and kept in the keyring on first use).
    `page=False` serves only the push endpoints (and /healthz): the page stays off.
    """
    host = settings.web.host if host is None else host
    people = store.people() or [store.person]
    # A household's page always needs a token, on loopback too: the token says who is asking.
    require_token = page and (len(people) > 1 or not access.is_loopback(host))
    states = []
    for person in people:
        theirs = settings if person == settings.person else settings.for_person(person)
        token = ensure_access_token(theirs) if require_token else get_access_token(theirs)
        states.append(
            WebState(
                settings=theirs,
                store=store if person == store.person else store.as_person(person),
                require_token=require_token,
                token=token,
                # With no token (loopback, no keyring) the CSRF key lives as long as the process.
                csrf=access.csrf_token(token or secrets.token_urlsafe(32)),
                clock=clock or (lambda: datetime.now(UTC)),
            )
        )
    routes = (
        [Route("/healthz", healthz)]
        if not page
        else [
            Route("/", page_view),
            Route("/history", history_page),
            Route("/validity", validity_page),
            Route("/checkin", checkin_form, methods=["POST"]),
            Route("/feedback", feedback_form, methods=["POST"]),
            Route("/events/{event_id}/label", label_form, methods=["POST"]),
            Route("/questions", question_form, methods=["POST"]),
            Route("/login", login, methods=["GET", "POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/healthz", healthz),
            Route(FEED_PREFIX + "{token}.ics", calendar_feed, methods=["GET", "HEAD"]),
            Route("/api/meters", api_meters),
            Route("/api/history", api_history),
            Route("/api/recommendation", api_recommendation),
            Route("/api/feedback", api_feedback, methods=["GET", "POST"]),
            Route(CHECKIN_API, api_checkin, methods=["POST"]),
            Route("/api/events", api_events),
            Route("/api/events/{event_id}/label", api_label, methods=["POST"]),
            Route("/api/questions", api_questions, methods=["GET", "POST"]),
            Route("/api/status", api_status),
            Route(PEOPLE_PATH, api_people),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
    )
    if settings.push.enabled:
        routes.extend(push.routes())
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(Guard, states=states, admin=get_admin_token(settings) if page else None),
            Middleware(
                BodyLimit, max_bytes=settings.web.max_body_kb * 1024, own_caps=(PUSH_PREFIX,)
            ),
        ],
        exception_handlers={HTTPException: _on_http, BridgeError: _on_bridge},
    )
    app.state.web = states[0]
    app.state.people = states
    return app
