"""WHOOP for many accounts of one client application, on 127.0.0.1, with a compressed day.

Each account has its own rotating token pair (a refresh token works once, as WHOOP's do:
a second use answers 400 invalid_grant and is counted as a reuse, which is what two
workers pulling one account at once would cause) and its own records: one cycle, sleep
and recovery per simulated day, in the shapes of WHOOP's OpenAPI examples.

The application's windows are WHOOP's (100 requests a minute, 10,000 a day) with the
clock compressed: a "day" lasts `day_seconds`. A request past any window is answered 429
with Retry-After and counted as a violation. Every record served is noted per account:
the truth the store is checked against.

    python -m tests.daemon.fake_whoop_many --day-seconds 300   # prints "port N"; stdin closes it
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
import zlib
from collections import defaultdict, deque
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from connectors.live import iso_z

BASE = "/whoop/developer"
PAGE = 25
STREAMS = {
    "/v2/cycle": "cycle",
    "/v2/activity/sleep": "sleep",
    "/v2/recovery": "recovery",
    "/v2/activity/workout": "workout",
}
# WHOOP's documented windows for one client application (developer.whoop.com/docs/
# developing/rate-limiting): 100 a minute, 10,000 a day.
WINDOWS = ((100, 60.0), (10_000, 86_400.0))


class Fake:
    def __init__(self, day_seconds: float, start: float | None = None) -> None:
        self.day = day_seconds
        self.scale = 86_400.0 / day_seconds
        self.start = start or time.time()
        self.lock = threading.Lock()
        self.windows = [(limit, window / self.scale, deque()) for limit, window in WINDOWS]
        self.refresh: dict[str, str] = {}
        self.issued: dict[str, str] = {}  # access token -> person
        self.served: dict[str, set[str]] = defaultdict(set)
        self.counts: dict[str, int] = defaultdict(int)

    # --- the application's windows ----------------------------------------------------------

    def admit(self) -> float | None:
        """None when this request fits every window; else the seconds to wait."""
        now = time.time()
        with self.lock:
            self.counts["requests"] += 1
            for _limit, window, sent in self.windows:
                while sent and now - sent[0] >= window:
                    sent.popleft()
            for limit, window, sent in self.windows:
                if len(sent) >= limit:
                    self.counts["window_violations"] += 1
                    return max(0.001, window - (now - sent[0]))
            for _limit, _window, sent in self.windows:
                sent.append(now)
        return None

    # --- tokens ---------------------------------------------------------------------------

    def token(self, refresh: str) -> dict[str, Any] | None:
        person = refresh.split(":", 1)[0]
        with self.lock:
            current = self.refresh.get(person, f"{person}:0")
            if refresh != current:
                self.counts["refresh_token_reuse"] += 1
                return None
            n = int(current.split(":")[1]) + 1
            self.refresh[person] = f"{person}:{n}"
            access = f"access-{person}-{n}-{uuid.uuid4().hex[:6]}"
            self.issued[access] = person
        return {
            "access_token": access,
            "refresh_token": f"{person}:{n}",
            # An hour of the compressed day, so tokens expire and rotate during a run.
            "expires_in": max(300, int(3600 / self.scale) + 240),
            "scope": "offline read:cycles read:sleep read:recovery read:workout",
            "token_type": "bearer",
        }

    # --- records --------------------------------------------------------------------------

    def days(self, now: float) -> range:
        """The simulated days whose records exist at `now`: three before the start, then
        one more every `day` seconds."""
        return range(-3, int((now - self.start) // self.day) + 1)

    def records(self, person: str, stream: str, now: float) -> list[tuple[datetime, dict]]:
        from tests.connectors.live.whoop_fakes import record_example

        out = []
        for k in self.days(now):
            begin = datetime.fromtimestamp(self.start + k * self.day, UTC).replace(microsecond=0)
            sleep_start = begin
            sleep_end = begin + timedelta(seconds=self.day * 0.3)
            cycle_id = zlib.crc32(f"{person}/{k}".encode())
            sleep_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{person}/{k}"))
            base = {"user_id": 1, "timezone_offset": "+00:00"}
            if stream == "cycle":
                raw = {**record_example("/v2/cycle"), **base, "id": cycle_id}
                raw.update(start=iso_z(begin), end=iso_z(begin + timedelta(seconds=self.day)))
                raw.update(created_at=iso_z(begin), updated_at=iso_z(begin))
                raw["score_state"] = "SCORED"
                out.append((begin, raw))
            elif stream == "sleep":
                raw = {**record_example("/v2/activity/sleep"), **base, "id": sleep_id}
                raw.update(cycle_id=cycle_id, start=iso_z(sleep_start), end=iso_z(sleep_end))
                raw.update(created_at=iso_z(sleep_end), updated_at=iso_z(sleep_end), nap=False)
                raw["score_state"] = "SCORED"
                out.append((sleep_start, raw))
            elif stream == "recovery":
                raw = {**record_example("/v2/recovery"), "user_id": 1}
                raw.update(cycle_id=cycle_id, sleep_id=sleep_id, score_state="SCORED")
                raw.update(created_at=iso_z(sleep_end), updated_at=iso_z(sleep_end))
                out.append((sleep_end, raw))
        return sorted(out, key=lambda pair: pair[0], reverse=True)

    def page(self, person: str, stream: str, query: dict[str, str]) -> dict[str, Any]:
        lo = datetime.fromisoformat(query["start"].replace("Z", "+00:00"))
        hi = datetime.fromisoformat(query["end"].replace("Z", "+00:00"))
        items = [raw for at, raw in self.records(person, stream, time.time()) if lo <= at < hi]
        offset = int(query.get("nextToken", "0"))
        body: dict[str, Any] = {"records": items[offset : offset + PAGE]}
        if offset + PAGE < len(items):
            body["next_token"] = str(offset + PAGE)
        with self.lock:
            self.served[person].update(json.dumps([stream, r]) for r in body["records"])
        return body


class Handler(BaseHTTPRequestHandler):
    fake: Fake
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def limited(self) -> bool:
        wait = self.fake.admit()
        if wait is None:
            return False
        self.send(429, {"error": "rate limited"}, {"Retry-After": f"{wait:.3f}"})
        return True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        path = urlsplit(self.path).path
        if path == "/_truth":
            with self.fake.lock:
                doc = {p: sorted(s) for p, s in self.fake.served.items()}
                return self.send(200, {"served": doc, "counts": dict(self.fake.counts)})
        if path != "/whoop/token":
            return self.send(404, {"error": "not found"})
        if self.limited():
            return None
        form = {k: v[0] for k, v in parse_qs(raw).items()}
        body = self.fake.token(form.get("refresh_token", ""))
        if body is None:
            return self.send(400, {"error": "invalid_grant"})
        return self.send(200, body)

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        rest = split.path.removeprefix(BASE)
        if rest not in STREAMS:
            return self.send(404, {"error": "not found"})
        if self.limited():
            return None
        bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
        person = self.fake.issued.get(bearer)
        if person is None:
            return self.send(401, {"error": "unauthorized"})
        return self.send(200, self.fake.page(person, STREAMS[rest], query))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(fake: Fake) -> Server:
    handler = type("H", (Handler,), {"fake": fake})
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--day-seconds", type=float, default=300.0)
    args = parser.parse_args()
    server = serve(Fake(args.day_seconds))
    print(f"port {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
