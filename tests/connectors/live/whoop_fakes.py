"""A fake WHOOP server for respx that checks every request against the official OpenAPI."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

import httpx

from bridge.auth.secrets import Secrets
from connectors.whoop import TOKEN_SECRET
from tests.shared import shared_path

SPEC = json.loads(shared_path("whoop", "whoop-openapi.json").read_text())
API = "https://api.prod.whoop.com/developer"
TOKEN_URL = "https://api.prod.whoop.com/oauth/oauth2/token"
COLLECTIONS = {
    "/v2/cycle": "PaginatedCycleResponse",
    "/v2/activity/sleep": "PaginatedSleepResponse",
    "/v2/recovery": "RecoveryCollection",
    "/v2/activity/workout": "WorkoutCollection",
}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def example_of(schema: dict[str, Any]) -> Any:
    """An instance built only from the spec's own `example` values."""
    schema = _resolve(schema)
    if "example" in schema:
        return schema["example"]
    if schema.get("type") == "array":
        return [example_of(schema["items"])]
    if "properties" in schema:
        return {k: example_of(v) for k, v in schema["properties"].items()}
    return None


def record_example(path: str) -> dict[str, Any]:
    page = SPEC["components"]["schemas"][COLLECTIONS[path]]
    return example_of(page["properties"]["records"]["items"])


def check_against_spec(request: httpx.Request) -> str:
    """Assert the request's path, method and query exist in the spec; return the spec path."""
    assert str(request.url).startswith(API), request.url
    path = request.url.path[len("/developer") :]
    for template, ops in SPEC["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path):
            op = ops.get(request.method.lower())
            assert op is not None, f"{request.method} {template} is not in the spec"
            declared = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}
            for name, values in parse_qs(request.url.query.decode()).items():
                assert name in declared, f"query parameter {name!r} not declared for {template}"
                schema = declared[name]["schema"]
                for value in values:
                    if schema.get("type") == "integer":
                        assert int(value) <= schema.get("maximum", 1 << 31)
                    if schema.get("format") == "date-time":
                        assert datetime.fromisoformat(value.replace("Z", "+00:00")).tzinfo
            return template
    raise AssertionError(f"{request.method} {path} matches no path of the spec")


def store_token(secrets: Secrets, *, expires_in: float = 3600, refresh: str = "refresh-0") -> None:
    secrets.set("whoop:client_secret", "whoop-client-secret-value")
    secrets.set_json(
        TOKEN_SECRET,
        {
            "access_token": "access-0",
            "refresh_token": refresh,
            "expires_at": time.time() + expires_in,
            "scope": "offline read:sleep",
        },
    )


class FakeWhoop:
    """Serves pages per collection; records every request it saw."""

    def __init__(self, pages: dict[str, list[list[dict[str, Any]]]] | None = None) -> None:
        self.pages = pages or {p: [[record_example(p)], []] for p in COLLECTIONS}
        self.seen: list[httpx.Request] = []
        self.valid_access = {"access-0"}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        template = check_against_spec(request)
        self.seen.append(request)
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.valid_access:
            return httpx.Response(401, json={"error": "unauthorized"})
        pages = self.pages.get(template, [[]])
        query = parse_qs(request.url.query.decode())
        assert int(query["limit"][0]) == 25
        index = int(query.get("nextToken", ["page0"])[0].removeprefix("page"))
        body: dict[str, Any] = {"records": pages[index]}
        if index + 1 < len(pages):
            body["next_token"] = f"page{index + 1}"
        return httpx.Response(200, json=body)
