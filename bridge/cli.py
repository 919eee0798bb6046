"""The `rhythm-bridge` command line. Thin: parse, call one library function, print.

Heavy modules (pandas, SQLAlchemy, the connectors) are imported inside the commands so
`rhythm-bridge --help` stays fast.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from typer.core import TyperGroup

from bridge.errors import BridgeError

if TYPE_CHECKING:
    from bridge.config import Settings
    from bridge.store import Store


class _Group(TyperGroup):
    """Turns library errors into one line on stderr and exit code 2, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BridgeError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    help="Bridge your wearables and calendar to a personal-life model.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

_state: dict[str, Any] = {}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@app.callback()
def _main(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            envvar="RHYTHM_BRIDGE_CONFIG",
            help="Config file (default: platform config dir).",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")] = False,
) -> None:
    _state["config"] = config
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )


def _settings() -> Settings:
    from bridge.config import load_settings

    if "settings" not in _state:
        _state["settings"] = load_settings(_state.get("config"))
    return _state["settings"]


def _store() -> Store:
    from bridge.store import Store

    if "store" not in _state:
        _state["store"] = Store(_settings().database_url)
    return _state["store"]


def _print_json(doc: Any) -> None:
    typer.echo(json.dumps(doc, indent=2, ensure_ascii=False, default=str))


def _fmt(value: float | None) -> str:
    return "  —  " if value is None else f"{value:5.2f}"


@app.command()
def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config.")] = False,
) -> None:
    """Write a starter config file (mode 0600) with every setting documented."""
    from bridge.config import default_config_path, write_starter_config

    path = write_starter_config(_state.get("config") or default_config_path(), force=force)
    typer.echo(f"wrote {path}; edit it, then run `rhythm-bridge run --once`")


@app.command()
def demo(
    as_json: JsonOpt = False,
    data_dir: Annotated[
        Path | None, typer.Option(help="Keep the demo store here (default: a temp dir).")
    ] = None,
) -> None:
    """Run the whole pipeline on bundled sample data: no config, no network."""
    from bridge.demo import run_demo

    result = run_demo(data_dir)
    if as_json:
        _print_json(result.snapshot)
        return
    for summary in result.imports:
        typer.echo(
            f"imported {Path(summary.path).name}: {summary.records} records, {summary.new} new"
        )
    _print_state(result.snapshot)
    typer.echo(f"\nstore and snapshot kept in {result.data_dir}")


def _print_state(doc: dict[str, Any]) -> None:
    from mappings.actions import METERS

    cur = doc.get("current")
    if cur:
        typer.echo(f"\nmeters for {cur['date']} {cur['slot_name']} (timestep {cur['timestep']}):")
        for m in METERS:
            conf = cur["confidence"][m]
            note = (
                cur["provenance"][m].get("reason", "")
                if cur[m] is None
                else f"confidence {conf:.2f}"
            )
            typer.echo(f"  {m:<11}{_fmt(cur[m])}   {note}")
    else:
        typer.echo("\nno meters yet for the current slot")
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(doc["timezone"])
    typer.echo("\nevents today:")
    for ev in doc.get("events_today", []):
        local = datetime.fromisoformat(ev["start"]).astimezone(tz)
        start = "all day" if ev["all_day"] else local.strftime("%H:%M")
        typer.echo(f"  {start:<8} {ev['title']:<32} -> {ev['action']} ({ev['layer']})")
    rec = doc.get("recommendation")
    if rec:
        typer.echo(
            f"\nrecommendation #{rec['id']} for {rec['date']} {rec['slot_name']}: "
            f"{rec['action']}\n  {rec['rationale']} [{rec['runner']}]"
        )


@app.command()
def run(
    once: Annotated[bool, typer.Option("--once", help="Run one cycle and exit.")] = False,
) -> None:
    """Run the daemon (a cycle every few minutes), or one cycle with --once."""
    if once:
        from bridge.pipeline import run_cycle

        report = run_cycle(_settings(), _store())
        for outcome in report.synced:
            typer.echo(
                f"{outcome.source}: {outcome.status}, {outcome.records} records, {outcome.new} new"
                + (f" ({outcome.error})" if outcome.error else "")
            )
        rec = report.recommendation or {}
        typer.echo(
            f"cycle done in {report.seconds:.1f}s: {report.classified} events classified, "
            f"{report.slots} slots computed, recommendation {rec.get('action')}; "
            f"snapshot {report.snapshot}"
        )
        return
    from bridge.daemon import run_daemon

    if not logging.getLogger().isEnabledFor(logging.INFO):
        logging.getLogger().setLevel(logging.INFO)
    run_daemon(_settings(), _store())


@app.command("import")
def import_(
    kind: Annotated[str, typer.Argument(help="apple-health, garmin-export, fit or ics")],
    path: Annotated[
        str, typer.Argument(help="The file to import (for ics also an https:// or webcal:// URL).")
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Import even if this exact file was imported before.")
    ] = False,
) -> None:
    """Import Apple Health export.zip/.xml, a Garmin export ZIP, a FIT file, or .ics (file/URL)."""
    from bridge.ingest import import_feed, import_file
    from bridge.progress import records_progress
    from connectors.base import ReadContext

    # Not bridge.pipeline: it pulls in pandas, which would double the import's memory.
    ctx = ReadContext(tz=_settings().tz, now=datetime.now(UTC))
    if kind == "ics" and path.lower().startswith(("http://", "https://", "webcal://")):
        summary = import_feed(_store(), path, ctx, force=force)
    else:
        with records_progress(f"importing {Path(path).name}") as progress:
            summary = import_file(_store(), kind, Path(path), ctx, force=force, progress=progress)
    typer.echo(summary.line())


@app.command()
def sync(
    source: Annotated[str | None, typer.Argument(help="One source (default: all enabled).")] = None,
) -> None:
    """Pull enabled sources now, whether or not they are due."""
    from bridge.pipeline import read_context
    from bridge.sources import SCHEDULED, enabled_sources, run_source

    settings, store = _settings(), _store()
    if source is not None and source not in SCHEDULED:
        raise BridgeError(f"unknown source {source!r}; choose one of: {', '.join(SCHEDULED)}")
    names = [source] if source else enabled_sources(settings)
    if not names:
        typer.echo("no source is enabled; enable one in the config ([sources.*] enabled = true)")
        return
    ctx = read_context(settings, datetime.now(UTC))
    failed = False
    for name in names:
        outcome = run_source(store, settings, name, ctx)
        failed |= outcome.error is not None
        typer.echo(
            f"{name}: {outcome.status}, {outcome.records} records, {outcome.new} new"
            + (f" ({outcome.error})" if outcome.error else "")
        )
    if failed:
        raise typer.Exit(1)


@app.command()
def meters(
    on: Annotated[
        str | None, typer.Option("--date", help="Local date YYYY-MM-DD (default: today).")
    ] = None,
    slot: Annotated[int | None, typer.Option(min=0, max=3, help="Slot 0-3 (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the stored meters of a day."""
    from sqlalchemy import select

    from bridge.export import slot_document
    from bridge.pipeline import current_slot
    from bridge.store.models import MeterSnapshot

    settings = _settings()
    try:
        day = date.fromisoformat(on) if on else current_slot(settings, datetime.now(UTC)).local_date
    except ValueError:
        raise BridgeError(f"--date {on!r}: use YYYY-MM-DD") from None
    with _store().session() as session:
        stmt = select(MeterSnapshot).where(MeterSnapshot.local_date == day)
        if slot is not None:
            stmt = stmt.where(MeterSnapshot.slot == slot)
        rows = [
            slot_document(s) for s in session.execute(stmt.order_by(MeterSnapshot.slot)).scalars()
        ]
    if as_json:
        _print_json(rows)
        return
    if not rows:
        typer.echo(f"no meters stored for {day}; run `rhythm-bridge run --once` first")
        return
    from mappings.actions import METERS

    typer.echo(f"{'slot':<10}" + "".join(f"{m:>12}" for m in METERS))
    for row in rows:
        typer.echo(f"{row['slot_name']:<10}" + "".join(f"{_fmt(row[m]):>12}" for m in METERS))


@app.command()
def classify(
    title: Annotated[
        str | None, typer.Argument(help="An event title (default: read titles from stdin).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Label event titles with one of the 10 actions; one JSON object per line from stdin."""
    from mappings.classifier import KeywordClassifier, RulesError

    try:
        classifier = KeywordClassifier(_settings().classifier.rules_file or None)
    except RulesError as err:
        raise BridgeError(str(err)) from None
    titles = [title] if title is not None else [line.rstrip("\n") for line in sys.stdin]
    for t in titles:
        res = classifier.classify(t)
        if as_json or title is None:
            typer.echo(
                json.dumps(
                    {
                        "title": t,
                        "action": res.action,
                        "confidence": res.confidence,
                        "layer": res.layer,
                    },
                    ensure_ascii=False,
                )
            )
        else:
            typer.echo(f"{res.action} (confidence {res.confidence:.2f}, {res.layer})")


@app.command()
def recommend(as_json: JsonOpt = False) -> None:
    """Recommend an action for the coming slot from the stored state."""
    from bridge.export import recommendation_document
    from bridge.pipeline import recommend as make

    rec = make(_store(), _settings(), datetime.now(UTC))
    doc = recommendation_document(rec, None)
    if as_json:
        _print_json(doc)
    else:
        typer.echo(
            f"#{doc['id']} {doc['date']} {doc['slot_name']}: {doc['action']} — {doc['rationale']}"
        )


@app.command()
def feedback(
    recommendation_id: Annotated[int, typer.Argument(help="The recommendation's id.")],
    response: Annotated[str, typer.Argument(help="accept, ignore or reschedule")],
) -> None:
    """Answer a recommendation: accept, ignore or reschedule."""
    from bridge.feedback import record_feedback

    fb, created = record_feedback(_store(), recommendation_id, response)
    typer.echo(
        f"recommendation #{recommendation_id}: {fb.response}"
        + ("" if created else " (already answered; unchanged)")
    )


@app.command()
def export(
    out: Annotated[Path | None, typer.Option("--out", help="Write here (default: stdout).")] = None,
    since: Annotated[str | None, typer.Option(help="First local date YYYY-MM-DD.")] = None,
) -> None:
    """Export the meter snapshot document (schema rhythm-bridge/snapshot@1)."""
    from bridge.export import build_snapshot, write_snapshot

    try:
        first = date.fromisoformat(since) if since else None
    except ValueError:
        raise BridgeError(f"--since {since!r}: use YYYY-MM-DD") from None
    doc = build_snapshot(_store(), _settings(), datetime.now(UTC), since=first)
    if out is None:
        _print_json(doc)
    else:
        typer.echo(f"wrote {write_snapshot(doc, out)}")


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Per source: status, last success, last error, records; database; next runs."""
    from bridge.status import collect_status

    doc = collect_status(_settings(), _store())
    if as_json:
        _print_json(doc)
        return
    typer.echo(f"database: {doc['database']} (schema {doc['schema_version']})")
    typer.echo(
        f"snapshot: {doc['snapshot']}\nlast cycle: {doc['last_cycle'] or 'never'}; "
        f"next cycle: {doc['next_cycle'] or 'when the daemon starts'}"
    )
    for s in doc["sources"]:
        state = s["status"] if s["enabled"] else "disabled"
        line = (
            f"  {s['source']:<16}{state:<17}records {s['records']:<8}"
            f"last ok {s['last_success'] or '—'}"
        )
        if s["last_error"]:
            line += f"\n{'':18}last error: {s['last_error']}"
        if s["action_needed"]:
            line += f"\n{'':18}action needed: run `{s['action_needed']}`"
        typer.echo(line)


# Command modules register themselves on `app` when imported (one line each).


def main() -> None:
    app()


if __name__ == "__main__":
    main()
