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
        finally:
            # Each invocation owns its store: close its connections when the command ends
            # (an embedding program or a test may invoke many commands in one process).
            store = _state.pop("store", None)
            if store is not None:
                store.dispose()
            _state.pop("settings", None)


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
    log_json: Annotated[
        bool, typer.Option("--log-json", envvar="RHYTHM_BRIDGE_LOG_JSON", help="Log JSON lines.")
    ] = False,
) -> None:
    from bridge.logs import setup_logging

    _state["config"] = config
    _state["log_json"] = log_json
    setup_logging(logging.INFO if verbose else logging.WARNING, as_json=log_json)


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
            typer.echo(outcome.line())
        rec = report.recommendation or {}
        typer.echo(
            f"cycle done in {report.seconds:.1f}s: {report.classified} events classified, "
            f"{report.slots} slots computed, recommendation {rec.get('action')}; "
            f"snapshot {report.snapshot}"
        )
        return
    from bridge.daemon import run_daemon
    from bridge.logs import setup_logging

    # A daemon logs every sync and cycle (journald keeps them), verbose or not.
    setup_logging(logging.INFO, as_json=_state.get("log_json", False))
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
    since: Annotated[
        str | None,
        typer.Option(help="Backfill from this local date YYYY-MM-DD instead of the cursor."),
    ] = None,
) -> None:
    """Pull enabled sources now, whether or not they are due (with --since: a backfill)."""
    from bridge.pipeline import read_context
    from bridge.sources import SCHEDULED, enabled_sources, run_source

    settings, store = _settings(), _store()
    if source is not None and source not in SCHEDULED:
        raise BridgeError(f"unknown source {source!r}; choose one of: {', '.join(SCHEDULED)}")
    try:
        first = (
            datetime.combine(date.fromisoformat(since), datetime.min.time(), tzinfo=settings.tz)
            if since
            else None
        )
    except ValueError:
        raise BridgeError(f"--since {since!r}: use YYYY-MM-DD") from None
    names = [source] if source else enabled_sources(settings)
    if not names:
        typer.echo("no source is enabled; enable one in the config ([sources.*] enabled = true)")
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    ctx = read_context(settings, datetime.now(UTC))
    failed = False
    for name in names:
        with Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True
        ) as bar:
            task = bar.add_task(f"{name}: starting")

            def step(stage: str, count: int, name: str = name, task: Any = task) -> None:
                bar.update(task, description=f"{name}: {stage} ({count})")

            outcome = run_source(store, settings, name, ctx, since=first, progress=step)
        failed |= outcome.error is not None
        typer.echo(outcome.line())
    if failed:
        raise typer.Exit(1)


@app.command()
def meters(
    on: Annotated[
        str | None, typer.Option("--date", help="Local date YYYY-MM-DD (default: today).")
    ] = None,
    slot: Annotated[int | None, typer.Option(min=0, max=3, help="Slot 0-3 (default: all).")] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show which inputs moved each meter, by how much.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the stored meters of a day (--explain: what moved each one)."""
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
    if explain:
        from mappings.explain import explain_slot
        from mappings.slots import SlotKey

        first = SlotKey(day, rows[0]["slot"]).prev()
        with _store().session() as session:
            found = session.execute(
                select(MeterSnapshot).where(
                    MeterSnapshot.local_date == first.local_date, MeterSnapshot.slot == first.slot
                )
            ).scalar_one_or_none()
        before = slot_document(found) if found else None
        for row in rows:
            typer.echo("")
            typer.echo("\n".join(explain_slot(row, before)))
            before = row


@app.command()
def classify(
    title: Annotated[
        str | None,
        typer.Argument(
            help="An event title (default: read titles from stdin); with --correct, the ACTION."
        ),
    ] = None,
    as_json: JsonOpt = False,
    correct: Annotated[
        str | None,
        typer.Option(
            "--correct",
            metavar="TITLE",
            help="Store `--correct TITLE ACTION` as your correction; it wins from now on "
            "('*' in TITLE = any text).",
        ),
    ] = None,
    forget: Annotated[
        bool, typer.Option("--forget", help="Remove your correction for TITLE.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Send nothing; print what the LLM layer would be sent."),
    ] = False,
) -> None:
    """Label event titles with one of the 10 actions; one JSON object per line from stdin."""
    from bridge.classification import (
        add_correction,
        build_classifier,
        remove_correction,
        save_llm_state,
    )

    if forget:
        if title is None:
            raise BridgeError("--forget needs the TITLE whose correction to remove")
        found = remove_correction(_store(), title)
        typer.echo("correction removed" if found else f"no correction stored for {title!r}")
        return

    if correct is not None:
        if title is None:  # with --correct, the argument is the action
            raise BridgeError(
                "--correct needs an ACTION: rhythm-bridge classify --correct TITLE ACTION"
            )
        fix = add_correction(_store(), correct, title)
        typer.echo(f"stored: titles like {fix.pattern!r} are {fix.action} from now on")
        return
    classifier = build_classifier(_settings(), _store(), dry_run=dry_run)
    titles = [title] if title is not None else [line.rstrip("\r\n") for line in sys.stdin]
    results = classifier.classify_many(titles)
    save_llm_state(_store(), _settings(), classifier.llm)  # type: ignore[arg-type]
    for t, res in zip(titles, results, strict=True):
        if as_json or title is None:
            doc = {
                "title": t,
                "action": res.action,
                "confidence": res.confidence,
                "layer": res.layer,
            }
            typer.echo(json.dumps(doc, ensure_ascii=False))
        else:
            typer.echo(f"{res.action} (confidence {res.confidence:.2f}, {res.layer})")
    for sent in getattr(classifier.llm, "would_send", []):
        body = json.dumps(sent.body, indent=2, ensure_ascii=False)
        typer.echo(f"dry run: would POST to {sent.url}:\n{body}", err=True)


@app.command()
def recommend(
    as_json: JsonOpt = False,
    state: Annotated[
        Path | None,
        typer.Option("--state", help="Recommend from this observation JSON, not the store."),
    ] = None,
    history: Annotated[
        Path | None,
        typer.Option("--history", help="With --state: the interaction history JSON array."),
    ] = None,
) -> None:
    """Recommend an action for the coming slot from the stored state (or JSON documents)."""
    if state is not None or history is not None:
        from bridge.pipeline import configured_runner
        from bridge.runner.documents import load_documents

        if state is None:
            raise BridgeError("--history needs --state (the observation to recommend for)")
        obs, hist = load_documents(state, history)
        rec = configured_runner(_settings()).recommend(obs, hist).as_dict()
        if as_json:
            _print_json(rec)
        else:
            typer.echo(f"{rec['action']} — {rec['rationale']} [{rec['runner']}]")
        return
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
    training_data: Annotated[
        Path | None,
        typer.Option(
            "--training-data",
            help="Instead: write your answers as a chat-format JSONL fine-tuning set here.",
        ),
    ] = None,
) -> None:
    """Export the meter snapshot document (schema rhythm-bridge/snapshot@1)."""
    if training_data is not None:
        from bridge.training_data import write_training_data

        count = write_training_data(_store(), _settings(), training_data)
        typer.echo(f"wrote {count} examples to {training_data}")
        return
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
    typer.echo("data freshness:")
    for f in doc["freshness"]:
        age = "never" if f["age_hours"] is None else f"{f['age_hours']} h ago"
        typer.echo(f"  {f['input']:<12}{age:<14}feeds {', '.join(f['meters'])}")
    for warning in doc["warnings"]:
        typer.echo(f"warning: {warning}", err=True)


# Command modules register themselves on `app` when imported (one line each).
import bridge.commands.auth  # noqa: E402
import bridge.commands.classifier  # noqa: E402
import bridge.commands.model  # noqa: E402
import bridge.commands.notify  # noqa: E402
import bridge.commands.ops  # noqa: E402
import bridge.commands.web  # noqa: E402, F401


def main() -> None:
    app()


if __name__ == "__main__":
    # `python -m bridge.cli` runs this file as __main__; the command modules extend the
    # imported `bridge.cli.app`, so run that one.
    from bridge.cli import main as _imported_main

    _imported_main()
