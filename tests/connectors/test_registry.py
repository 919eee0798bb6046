"""connectors/registry.py against everything it must agree with: the config model, both
example configs, the plausibility ranges, the connector modules and the `auth` flows; and
a source added only there reaches the scheduler, `auth`, `status` and the CLI."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from bridge.config import Settings, Sources, SourceSettings
from bridge.intake.connect import REVOKERS
from connectors.registry import BY_NAME, SCHEDULED, SOURCES, WITH_AUTH, SourceSpec
from connectors.validate import RANGES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = (ROOT / "config.example.toml", ROOT / "bridge" / "config.example.toml")
# What a source provides that is no reading, so has no plausibility range.
NOT_READINGS = frozenset({"calendar", "tasks"})

by_name = pytest.mark.parametrize("spec", SOURCES, ids=[s.name for s in SOURCES])


def test_every_scheduled_source_has_a_settings_section_and_no_section_lacks_a_source():
    assert set(Sources.model_fields) == set(SCHEDULED)
    for name in SCHEDULED:
        model = Sources.model_fields[name].annotation
        assert isinstance(model, type) and issubclass(model, SourceSettings), name


@by_name
def test_a_sources_config_section_and_watched_folder_setting_exist(spec: SourceSpec):
    if spec.section is None:
        return
    section = getattr(Settings().sources, spec.section)
    if spec.watch is not None:
        assert spec.watch.setting in type(section).model_fields, spec.name
    for path in EXAMPLES:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        table = doc["sources"].get(spec.section)
        assert table is not None, f"{path.name}: no [sources.{spec.section}] for {spec.name}"
        if spec.watch is not None:
            assert spec.watch.setting in table, f"{path.name}: {spec.section}.{spec.watch.setting}"


@by_name
def test_every_metric_a_source_provides_has_a_plausibility_range(spec: SourceSpec):
    missing = sorted(spec.provides - NOT_READINGS - set(RANGES))
    assert not missing, f"{spec.name}: no range in connectors/validate.py RANGES for {missing}"


def _emitted(module_name: str) -> set[str]:
    """Metric keys a module passes as a literal to ReadingRecord (or a `rec` helper of it)."""
    tree = ast.parse(Path(import_module(module_name).__file__ or "").read_text(encoding="utf-8"))
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
        in ("ReadingRecord", "rec")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


@by_name
def test_every_metric_a_connector_emits_is_declared(spec: SourceSpec):
    module = import_module(spec.module)
    emitted = _emitted(spec.module)
    # Metric tables: vendor type -> our key (Apple), or key -> (metric, unit, factors).
    for table in ("QUANTITY_TYPES", "METRICS"):
        values = getattr(module, table, {}).values()
        emitted |= {v if isinstance(v, str) else v[0] for v in values}
    undeclared = emitted - spec.provides
    assert not undeclared, f"{spec.name} emits {sorted(undeclared)}, not in its spec's provides"


@by_name
def test_a_spec_matches_its_connector_module(spec: SourceSpec):
    module = import_module(spec.module)
    if spec.imports:
        assert callable(module.read) and spec.cli == module.KIND
    if spec.imports or spec.live or spec.pushed:
        assert spec.source == module.SOURCE
    if spec.live:
        assert callable(module.pull)
    if spec.pushed:
        assert callable(module.read_stream)


def test_every_source_with_credentials_can_be_revoked():
    assert set(REVOKERS) == set(WITH_AUTH)
    for spec in WITH_AUTH.values():
        assert spec.auth is not None and spec.auth.credential in spec.auth.secrets


# The write-back's consent belongs to [google_write], revoked by `auth google-write --revoke`.
NOT_A_SOURCES_SECRET = frozenset({"google_calendar:write_token"})


@pytest.mark.parametrize("name", sorted(WITH_AUTH))
def test_every_keyring_entry_a_connector_names_is_in_its_spec(name: str):
    # `auth status` and `auth revoke` only know the entries the spec lists.
    spec = WITH_AUTH[name]
    module = import_module(spec.module)
    named = {v for k, v in vars(module).items() if k.endswith("_SECRET") and isinstance(v, str)}
    assert spec.auth is not None
    assert named - NOT_A_SOURCES_SECRET <= set(spec.auth.secrets), name


def test_registry_lookups_cover_every_spec():
    assert list(BY_NAME.values()) == list(SOURCES)


FAKE_SOURCE = """
import json, sys
from datetime import UTC, datetime

import connectors.registry as r

oura = r.SourceSpec(
    name="oura",
    provides=frozenset({"sleep"}),
    section="oura",
    live=True,
    auth=r.Auth(
        kind="oauth", command="oura", credential="oura:token", token="oura:token",
        secrets=("oura:token", "oura:client_secret"),
    ),
)
r.SOURCES = (*r.SOURCES, oura)
vars(r).update(r.tables(r.SOURCES))

from typer.testing import CliRunner

from bridge.cli.main import app
from bridge.config import Settings, SourceSettings
from bridge.intake import connect, live, sources
from bridge.out.status import collect_status
from bridge.store import Store

settings = Settings.model_validate(
    {"data_dir": sys.argv[2], "database": {"url": sys.argv[1]}}
)
# The config model is the one place not derived (bridge.config sits below connectors):
# stand in for the section the new source would add there.
object.__setattr__(settings.sources, "oura", SourceSettings(enabled=True))
store = Store(settings.database_url)
cli = CliRunner()
print(json.dumps({
    "scheduled": list(sources.SCHEDULED),
    "enabled": sources.enabled_sources(settings),
    "spelling": sources.source_section("oura"),
    "live": live.LIVE_SOURCES.get("oura"),
    "credentials": list(connect.CREDENTIALS.get("oura", ())),
    "secrets": list(connect.SECRET_NAMES.get("oura", ())),
    "auth_name": connect.source_name("oura"),
    "status": [s["source"] for s in collect_status(settings, store, datetime.now(UTC))["sources"]],
    "sync_help": cli.invoke(app, ["sync", "--help"]).output,
    "revoke_help": cli.invoke(app, ["auth", "revoke", "--help"]).output,
}))
store.dispose()
"""


def test_a_source_declared_only_in_the_registry_reaches_scheduler_auth_status_and_cli(
    tmp_path: Path, database_url: str
):
    # A subprocess: the derived tables are built at import, and must stay untouched here.
    out = subprocess.run(
        [sys.executable, "-c", FAKE_SOURCE, database_url, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["scheduled"][-1] == "oura" and "oura" in doc["enabled"]
    assert doc["spelling"] == "oura" and doc["live"] == "connectors.oura"
    assert doc["credentials"] == ["oura:token", "oura:token"]
    assert doc["secrets"] == ["oura:token", "oura:client_secret"]
    assert doc["auth_name"] == "oura"
    assert "oura" in doc["status"]
    assert "whoop or garmin" not in doc["sync_help"] and "oura" in doc["sync_help"]
    assert "garmin or oura" in doc["revoke_help"]
