"""The pipeline's own commands: init, demo, run, import, sync, meters, classify,
recommend, feedback, export, status."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from bridge.cli.core import JsonOpt, app, current_settings, current_store, fmt, print_json, state
from bridge.errors import BridgeError


def window_text(doc: dict[str, Any]) -> str:
    """' 09:00-09:45' (wall time of the window's offset), plus why, when there is a why."""
    w, why = doc.get("window"), doc.get("window_reason")
    if not w:
        return f" (no free window: {why})"
    start, end = datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])
    return f" {start:%H:%M}-{end:%H:%M}" + (f" ({why})" if why else "")


@app.command()
def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config.")] = False,
) -> None:
    """Write a starter config file (mode 0600) with every setting documented."""
    from bridge.config import default_config_path, write_starter_config

    path = write_starter_config(state.get("config") or default_config_path(), force=force)
    typer.echo(f"wrote {path}; edit it, then run `rhythm-bridge run --once`")


@app.command()
def demo(
    as_json: JsonOpt = False,
    data_dir: Annotated[
        Path | None, typer.Option(help="Keep the demo store here (default: a temp dir).")
    ] = None,
) -> None:
    """Run the whole pipeline on bundled sample data: no config, no network."""
    from bridge.cycle.demo import run_demo

    result = run_demo(data_dir)
    if as_json:
        print_json(result.snapshot)
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
            typer.echo(f"  {m:<11}{fmt(cur[m])}   {note}")
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
            f"\nrecommendation #{rec['id']} for {rec['date']} {rec['slot_name']}"
            f"{window_text(rec)}: {rec['action']}\n  {rec['rationale']} [{rec['runner']}]"
        )


@app.command()
def run(
    once: Annotated[bool, typer.Option("--once", help="Run one cycle and exit.")] = False,
) -> None:
    """Run the daemon (a cycle every few minutes), or one cycle with --once."""
    if once:
        from bridge.cycle.run import run_cycle

        report = run_cycle(current_settings(), current_store())
        for outcome in report.synced:
            typer.echo(outcome.line())
        rec = report.recommendation or {}
        typer.echo(
            f"cycle done in {report.seconds:.1f}s: {report.classified} events classified, "
            f"{report.slots} slots computed, recommendation {rec.get('action')}; "
            f"snapshot {report.snapshot}"
        )
        from bridge.out.mqtt.link import publish_once

        # The cycle is stored either way; an unreachable broker still fails the command.
        message = publish_once(current_settings(), current_store())
        if message:
            typer.echo(message)
        return
    from bridge.daemon.scheduler import run_daemon
    from bridge.logs import setup_logging

    # A daemon logs every sync and cycle (journald keeps them), verbose or not.
    setup_logging(logging.INFO, as_json=state.get("log_json", False))
    run_daemon(current_settings(), current_store())


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
    from bridge.cli.progress import records_progress
    from bridge.intake.ingest import import_feed, import_file
    from connectors.base import ReadContext

    # Not bridge.cycle: it pulls in pandas, which would double the import's memory.
    ctx = ReadContext(tz=current_settings().tz, now=datetime.now(UTC))
    if kind == "ics" and path.lower().startswith(("http://", "https://", "webcal://")):
        summary = import_feed(current_store(), path, ctx, force=force)
    else:
        try:
            with records_progress(f"importing {Path(path).name}") as progress:
                summary = import_file(
                    current_store(), kind, Path(path), ctx, force=force, progress=progress
                )
        except KeyboardInterrupt:
            # The import is one transaction: Ctrl-C rolled all of it back.
            typer.echo("interrupted; nothing from this file was stored", err=True)
            raise typer.Exit(130) from None
    typer.echo(summary.line())


@app.command()
def sync(
    source: Annotated[
        str | None,
        typer.Argument(
            help="One source: apple-health, ics, google-calendar, whoop or garmin "
            "(default: all enabled)."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Backfill from this local date YYYY-MM-DD instead of the cursor."),
    ] = None,
) -> None:
    """Pull enabled sources now, whether or not they are due (with --since: a backfill)."""
    from bridge.intake.sources import (
        SOURCE_NAMES,
        enabled_sources,
        read_context,
        run_source,
        source_section,
    )

    section = source_section(source) if source is not None else None
    if source is not None and section is None:
        raise BridgeError(f"unknown source {source!r}; choose one of: {', '.join(SOURCE_NAMES)}")
    settings, store = current_settings(), current_store()
    try:
        first = (
            datetime.combine(date.fromisoformat(since), datetime.min.time(), tzinfo=settings.tz)
            if since
            else None
        )
    except ValueError:
        raise BridgeError(f"--since {since!r}: use YYYY-MM-DD") from None
    names = [section] if section else enabled_sources(settings)
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

    from bridge.clock import current_slot
    from bridge.out.snapshot import slot_document
    from bridge.store.models import MeterSnapshot

    settings = current_settings()
    try:
        day = date.fromisoformat(on) if on else current_slot(settings, datetime.now(UTC)).local_date
    except ValueError:
        raise BridgeError(f"--date {on!r}: use YYYY-MM-DD") from None
    with current_store().session() as session:
        stmt = select(MeterSnapshot).where(MeterSnapshot.local_date == day)
        if slot is not None:
            stmt = stmt.where(MeterSnapshot.slot == slot)
        rows = [
            slot_document(s) for s in session.execute(stmt.order_by(MeterSnapshot.slot)).scalars()
        ]
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo(f"no meters stored for {day}; run `rhythm-bridge run --once` first")
        return
    from mappings.actions import METERS

    typer.echo(f"{'slot':<10}" + "".join(f"{m:>12}" for m in METERS))
    for row in rows:
        typer.echo(f"{row['slot_name']:<10}" + "".join(f"{fmt(row[m]):>12}" for m in METERS))
    if explain:
        from mappings.explain import explain_slot
        from mappings.slots import SlotKey

        first = SlotKey(day, rows[0]["slot"]).prev()
        with current_store().session() as session:
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
    from bridge.cycle.classify import build_classifier, save_llm_state
    from bridge.learning.corrections import add_correction, remove_correction

    if forget:
        if title is None:
            raise BridgeError("--forget needs the TITLE whose correction to remove")
        found = remove_correction(current_store(), title)
        typer.echo("correction removed" if found else f"no correction stored for {title!r}")
        return

    if correct is not None:
        if title is None:  # with --correct, the argument is the action
            raise BridgeError(
                "--correct needs an ACTION: rhythm-bridge classify --correct TITLE ACTION"
            )
        fix = add_correction(current_store(), correct, title)
        typer.echo(f"stored: titles like {fix.pattern!r} are {fix.action} from now on")
        return
    classifier = build_classifier(current_settings(), current_store(), dry_run=dry_run)
    titles = [title] if title is not None else [line.rstrip("\r\n") for line in sys.stdin]
    results = classifier.classify_many(titles)
    save_llm_state(current_store(), current_settings(), classifier.llm)  # type: ignore[arg-type]
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
        from bridge.cycle.recommend import configured_runner
        from bridge.runner.documents import load_documents

        if state is None:
            raise BridgeError("--history needs --state (the observation to recommend for)")
        obs, hist = load_documents(state, history)
        rec = configured_runner(current_settings()).recommend(obs, hist).as_dict()
        if as_json:
            print_json(rec)
        else:
            typer.echo(f"{rec['action']} — {rec['rationale']} [{rec['runner']}]")
        return
    from bridge.cycle.recommend import recommend as make
    from bridge.out.snapshot import recommendation_document

    settings = current_settings()
    rec = make(current_store(), settings, datetime.now(UTC))
    doc = recommendation_document(rec, None, settings.tz)
    if as_json:
        print_json(doc)
    else:
        typer.echo(
            f"#{doc['id']} {doc['date']} {doc['slot_name']}{window_text(doc)}: "
            f"{doc['action']} — {doc['rationale']}"
        )


@app.command()
def feedback(
    recommendation_id: Annotated[int, typer.Argument(help="The recommendation's id.")],
    response: Annotated[str, typer.Argument(help="accept, ignore or reschedule")],
) -> None:
    """Answer a recommendation: accept, ignore or reschedule (proposes the next free window)."""
    from bridge.cycle.answer import answer
    from bridge.out.snapshot import recommendation_document

    settings = current_settings()
    fb, created, proposal = answer(
        current_store(), settings, recommendation_id, response, datetime.now(UTC)
    )
    typer.echo(
        f"recommendation #{recommendation_id}: {fb.response}"
        + ("" if created else " (already answered; unchanged)")
    )
    if fb.response == "rescheduled":
        if proposal is None:
            typer.echo("no free window for it today or tomorrow")
        else:
            doc = recommendation_document(proposal, None, settings.tz)
            typer.echo(
                f"next free window: #{doc['id']} {doc['date']} {doc['slot_name']}"
                f"{window_text(doc)}: {doc['action']}"
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
        from bridge.learning.training_data import write_training_data

        count = write_training_data(current_store(), current_settings(), training_data)
        typer.echo(f"wrote {count} examples to {training_data}")
        return
    from bridge.out.snapshot import build_snapshot, write_snapshot

    try:
        first = date.fromisoformat(since) if since else None
    except ValueError:
        raise BridgeError(f"--since {since!r}: use YYYY-MM-DD") from None
    doc = build_snapshot(current_store(), current_settings(), datetime.now(UTC), since=first)
    if out is None:
        print_json(doc)
    else:
        typer.echo(f"wrote {write_snapshot(doc, out)}")


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Per source: status, last success, last error, records; database; next runs."""
    from bridge.out.status import collect_status

    doc = collect_status(current_settings(), current_store())
    if as_json:
        print_json(doc)
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
    for d in doc["push_devices"]:
        line = (
            f"  push {d['device']:<11}{d['status']:<17}last push {d['last_push'] or 'never'}; "
            f"{d['last_records']} records ({d['records_total']} in all)"
        )
        if d["last_error"]:
            line += f"\n{'':18}last error ({d['last_error_at']}): {d['last_error']}"
        typer.echo(line)
    typer.echo("data freshness:")
    for f in doc["freshness"]:
        age = "never" if f["age_hours"] is None else f"{f['age_hours']} h ago"
        typer.echo(f"  {f['input']:<12}{age:<14}feeds {', '.join(f['meters'])}")
    for warning in doc["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
