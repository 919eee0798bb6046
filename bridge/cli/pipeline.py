"""The pipeline's own commands: init, demo, run, import, sync, meters, classify,
recommend, feedback, export, status."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bridge.cli.core import (
    JsonOpt,
    SlotOpt,
    app,
    base_settings,
    current_settings,
    current_store,
    date_arg,
    everyone,
    file_in,
    fmt,
    print_json,
    registry_store,
    slot_arg,
    state,
)
from bridge.errors import BridgeError
from bridge.out import SNAPSHOT_SCHEMA_ID
from connectors.registry import IMPORT_KINDS, SCHEDULED, spelled

if TYPE_CHECKING:
    from bridge.config import Settings
    from bridge.store import Store


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
    typer.echo(
        f"wrote {path}; every source in it is off. Next: import a file "
        "(rhythm-bridge import apple-health export.zip) or enable a source in it, "
        "then run `rhythm-bridge run --once`"
    )


@app.command()
def demo(
    as_json: JsonOpt = False,
    keep: Annotated[
        Path | None,
        typer.Option(
            "--keep",
            "--data-dir",
            metavar="DIR",
            help="Keep the demo's store and snapshot in DIR (default: a temporary folder, "
            "removed when the demo ends).",
        ),
    ] = None,
) -> None:
    """Run the whole pipeline on bundled sample data: no config, no network."""
    from bridge.cycle.demo import run_demo

    result = run_demo(keep)
    where = (
        f"store and snapshot kept in {result.data_dir}"
        if result.data_dir is not None
        else "the demo's temporary store was removed (keep it with --keep DIR)"
    )
    if as_json:
        print_json(result.snapshot)
        if result.data_dir is not None:
            typer.echo(where, err=True)  # stdout stays the snapshot document alone
        return
    for summary in result.imports:
        typer.echo(
            f"imported {Path(summary.path).name}: {summary.records} records, {summary.new} new"
        )
    _print_state(result.snapshot)
    typer.echo(f"\n{where}")


def _print_state(doc: dict[str, Any]) -> None:
    from mappings.actions import METERS

    cur = doc.get("current")
    if cur:
        typer.echo(f"\nmeters for {cur['date']} {cur['slot_name']} (timestep {cur['timestep']}):")
        from mappings.ages import human_age

        for m in METERS:
            conf = cur["confidence"][m]
            fresh = (cur.get("freshness") or {}).get(m) or {}
            note = (
                cur["provenance"][m].get("reason", "")
                if cur[m] is None
                else f"confidence {conf:.2f}, newest input {human_age(fresh.get('age_hours'))} old"
                + (" (stale)" if fresh.get("stale") else "")
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
    """Run the daemon (a cycle every few minutes), or one cycle with --once.

    In a household it serves everyone (or the person named with --person)."""
    people = everyone()
    if once:
        for settings, store in people:
            _run_once(settings, store, f"{settings.person}: " if len(people) > 1 else "")
        return
    from bridge.daemon.scheduler import run_daemon
    from bridge.logs import setup_logging

    # A daemon logs every sync and cycle (journald keeps them), verbose or not.
    setup_logging(logging.INFO, as_json=state.get("log_json", False))
    run_daemon(people[0][0], people[0][1], people)


@app.command()
def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            max=64,
            help="Jobs this process runs at once (default: [workers] concurrency).",
        ),
    ] = None,
    apply_schema: Annotated[
        bool,
        typer.Option(
            "--apply-schema", help="Create the job queue's tables in the database, then exit."
        ),
    ] = False,
) -> None:
    """Run syncs, cycles and refits for many people as jobs (database on PostgreSQL).

    Start it on as many machines as needed, all on the same database: each account is
    pulled by one worker at a time and the providers' limits are shared by all."""
    from bridge.daemon import workers
    from bridge.logs import setup_logging

    settings = base_settings()
    workers.needs_postgres(settings)
    store = registry_store()
    if apply_schema:
        workers.apply_schema(settings)
        typer.echo("the job queue's tables are in place")
        return
    setup_logging(logging.INFO, as_json=state.get("log_json", False))
    workers.run_worker(settings, store, concurrency=concurrency)


def _run_once(settings: Settings, store: Store, who: str) -> None:
    from bridge.cli.progress import slots_progress
    from bridge.cycle.run import run_cycle

    with slots_progress(f"{who}computing meters") as progress:
        report = run_cycle(settings, store, progress=progress)
    for outcome in report.synced:
        typer.echo(who + outcome.line())
    rec = report.recommendation or {}
    what = rec.get("action") or f"none ({rec.get('no_window')})"
    typer.echo(
        f"{who}cycle done in {report.seconds:.1f}s: {report.classified} events classified, "
        f"{report.slots} slots computed, recommendation {what}; "
        f"snapshot {report.snapshot}"
    )
    if not report.synced and _empty(store):
        typer.echo(
            f"{who}no data yet: no source is enabled and nothing was imported, so the meters "
            "are empty; import a file (rhythm-bridge import KIND PATH) or enable a source in "
            "the config"
        )
    from bridge.out.mqtt.link import publish_once

    # The cycle is stored either way; an unreachable broker still fails the command.
    message = publish_once(settings, store)
    if message:
        typer.echo(who + message)


@app.command("import")
def import_(
    kind: Annotated[str, typer.Argument(help=spelled([*IMPORT_KINDS, "checkins"]))],
    path: Annotated[
        str,
        typer.Argument(
            help="The file to import (apple-health, fitbit, whoop-export: also the unzipped "
            "export folder; ics: also an https:// or webcal:// URL)."
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Import even if this exact file was imported before.")
    ] = False,
) -> None:
    """Import Apple Health export.zip/.xml, a Garmin export ZIP, a FIT file, a Fitbit Takeout
    or WHOOP export (ZIP or folder), a readings CSV (docs/reference/readings-csv.md), a
    check-in CSV, or .ics (file/URL)."""
    if kind == "checkins":
        from bridge.cli.checkins import import_checkins_command

        import_checkins_command(Path(path))
        return
    from bridge.cli.progress import records_progress
    from bridge.intake.ingest import import_file
    from bridge.intake.sources import read_context

    # Not bridge.cycle: it pulls in pandas, which would double the import's memory.
    ctx = read_context(current_settings(), datetime.now(UTC))
    if kind == "ics" and path.lower().startswith(("http://", "https://", "webcal://")):
        summary = _import_url(current_store(), path, ctx, force=force)
    else:
        file = _import_path(kind, Path(path))
        # The database is opened (and brought to the newest schema) before the bar shows:
        # a Ctrl-C the person gives while watching the bar then lands in the import, which
        # is one transaction, never in a migration.
        store = current_store()
        try:
            with records_progress(f"importing {file.name}") as progress:
                summary = import_file(store, kind, file, ctx, force=force, progress=progress)
        except KeyboardInterrupt:
            # The import is one transaction: Ctrl-C rolled all of it back.
            typer.echo("interrupted; nothing from this file was stored", err=True)
            raise typer.Exit(130) from None
    typer.echo(summary.line())
    if summary.new:
        typer.echo("the next cycle computes the meters of every day it brought (run --once)")


def _empty(store: Store) -> bool:
    """Nothing stored to compute meters from: no reading, no event, no task."""
    from sqlalchemy import select

    from bridge.store.models import CalendarEvent, Reading, Task

    with store.session() as session:
        return all(
            session.execute(select(model).limit(1)).first() is None
            for model in (Reading, CalendarEvent, Task)
        )


def _import_path(kind: str, path: Path) -> Path:
    """The file to import: an unzipped Apple Health export folder stands for its export.xml."""
    path = path.expanduser()
    if not path.is_dir():
        return path
    spec = IMPORT_KINDS.get(kind)
    if spec is not None and spec.folders:
        return path  # an unzipped export, read as it is
    if kind != "apple-health":
        raise BridgeError(f"{path}: a folder; give the {kind} file itself")
    # Apple's ZIP unzips to apple_health_export/export.xml (beside export_cda.xml and routes).
    for candidate in (path / "export.xml", path / "apple_health_export" / "export.xml"):
        if candidate.is_file():
            return candidate
    raise BridgeError(
        f"{path}: a folder without export.xml; give the export.zip, its export.xml, "
        "or the unzipped apple_health_export folder"
    )


def _import_url(store: Store, url: str, ctx: Any, *, force: bool) -> Any:
    """A one-shot feed import: a network failure says what happened and what to do."""
    from bridge.errors import Transient
    from bridge.intake.ingest import import_feed

    try:
        return import_feed(store, url, ctx, force=force)
    except Transient as err:
        what = str(err).removesuffix("; will retry")
        raise BridgeError(
            f"{what}; nothing was imported. Check the link and the network and run the "
            "command again, or add the link to [sources.ics] urls so the daemon retries it"
        ) from None


@app.command()
def sync(
    source: Annotated[
        str | None,
        typer.Argument(
            help=f"One source: {spelled([s.cli for s in SCHEDULED.values()])} "
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
    if first is not None:
        typer.echo("the next cycle computes the meters of every day the backfill brought")
    if failed:
        raise typer.Exit(1)


@app.command()
def meters(
    *,
    on: Annotated[
        str | None, typer.Option("--date", help="One local date YYYY-MM-DD (default: today).")
    ] = None,
    first: Annotated[
        str | None, typer.Option("--from", help="First local date of a range YYYY-MM-DD.")
    ] = None,
    last: Annotated[
        str | None, typer.Option("--to", help="Last local date of a range (default: today).")
    ] = None,
    slot: SlotOpt = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show which inputs moved each meter, by how much.")
    ] = False,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV (one row per slot).")] = False,
) -> None:
    """Show the stored meters of a day or a date range (--explain: what moved each one).

    A value marked * is stale: its freshest input is older than [meters] stale_after_hours.
    """
    from bridge.clock import current_slot
    from bridge.out.history import stored_range
    from bridge.out.snapshot import slots_between

    settings = current_settings()
    slot_no = slot_arg(slot)
    if on is not None and (first or last):
        raise BridgeError("--date is one day; for a range use --from and --to without it")
    if as_json and as_csv:
        raise BridgeError("--json and --csv: choose one")
    today = current_slot(settings, datetime.now(UTC)).local_date
    lo, hi = _meters_span(on, first, last, today)
    store = current_store()
    rows = slots_between(store, lo, hi, slot_no)
    if not rows:
        span = stored_range(store)
        what = f"for {lo}" if lo == hi else f"from {lo} to {hi}"
        line = (
            f"no meters stored {what}; stored meters run from {span[0]} to {span[1]}"
            if span
            else f"no meters stored {what}; run `rhythm-bridge run --once` first"
        )
        typer.echo(line, err=as_json or as_csv)
    if as_json:
        print_json(rows)
        return
    if as_csv:
        from bridge.out.history import slots_csv

        typer.echo(slots_csv(rows), nl=False)
        return
    if not rows:
        return
    _echo_meters(rows, ranged=lo != hi, stale_after_hours=settings.meters.stale_after_hours)
    if explain:
        _echo_explained(store, rows)


def _meters_span(
    on: str | None, first: str | None, last: str | None, today: date
) -> tuple[date, date]:
    """The first and last local date `meters` shows: one day, or --from/--to."""
    if first or last:
        lo = date_arg(first, "--from") or date_arg(last, "--to")
        hi = date_arg(last, "--to") or today
        if lo > hi:
            raise BridgeError(f"--from {lo} is after --to {hi}; swap them")
        return lo, hi
    day = date_arg(on, "--date") or today
    return day, day


def _echo_meters(rows: list[dict[str, Any]], *, ranged: bool, stale_after_hours: float) -> None:
    """The meters table, the newest slot's input ages and the stale mark's key."""
    from mappings.actions import METERS
    from mappings.ages import human_age

    typer.echo(
        ("date        " if ranged else "") + f"{'slot':<10}" + "".join(f"{m:>12}" for m in METERS)
    )
    stale_seen = False
    for row in rows:
        cells = []
        for m in METERS:
            fresh = (row.get("freshness") or {}).get(m) or {}
            mark = "*" if fresh.get("stale") and row[m] is not None else " "
            stale_seen |= mark == "*"
            cells.append(f"{fmt(row[m]) + mark:>12}")
        typer.echo(
            (f"{row['date']}  " if ranged else "") + f"{row['slot_name']:<10}" + "".join(cells)
        )
    newest = rows[-1]
    ages = []
    for m in METERS:
        fresh = (newest.get("freshness") or {}).get(m)
        if fresh:
            ages.append(f"{m} {human_age(fresh['age_hours'])}")
    if ages:
        typer.echo(f"freshest input ({newest['date']} {newest['slot_name']}): " + ", ".join(ages))
    if stale_seen:
        typer.echo(f"* stale: the freshest input is older than {stale_after_hours:g} h")


def _echo_explained(store: Store, rows: list[dict[str, Any]]) -> None:
    """What moved each meter of each slot, from the slot before the first one shown."""
    from bridge.out.snapshot import stored_slot
    from mappings.explain import explain_slot
    from mappings.slots import SlotKey

    before = stored_slot(
        store, SlotKey(date.fromisoformat(rows[0]["date"]), rows[0]["slot"]).prev()
    )
    for row in rows:
        typer.echo("")
        typer.echo("\n".join(explain_slot(row, before)))
        before = row


@app.command()
def classify(
    title: Annotated[
        str | None,
        typer.Argument(
            help="An event title (default: read titles from stdin); with --correct, the "
            "ACTION; with --questions, how many (default 5)."
        ),
    ] = None,
    *,
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
    questions: Annotated[
        bool,
        typer.Option(
            "--questions",
            help="List the titles whose answer would set the most of your calendar right "
            "(past 4 weeks, next 2): what the classifier cannot label or is unsure of first.",
        ),
    ] = False,
) -> None:
    """Label event titles with one of the 10 actions; one JSON object per line from stdin."""
    from bridge.cycle.classify import build_classifier, save_llm_state
    from bridge.learning.corrections import add_correction, relabel_answered, remove_correction

    if questions:
        _echo_questions(title, as_json=as_json)
        return

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
        relabelled = relabel_answered(current_store(), fix)
        typer.echo(
            f"stored: titles like {fix.pattern!r} are {fix.action} from now on "
            f"({relabelled} stored event{'s' if relabelled != 1 else ''} relabelled)"
        )
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


def _echo_questions(count: str | None, *, as_json: bool) -> None:
    from bridge.cycle.questions import calendar_questions
    from mappings.actions import action_name

    if count is not None and not (count.isdigit() and int(count) > 0):
        raise BridgeError(f"--questions takes how many to list (a whole number), not {count!r}")
    found = calendar_questions(
        current_store(), current_settings(), datetime.now(UTC), int(count or 5)
    )
    if as_json:
        print_json([q.as_dict() for q in found])
        return
    if not found:
        typer.echo("no questions: every event of the past 4 weeks and the next 2 is answered")
        return
    for i, q in enumerate(found, 1):
        guess = "no guess" if q.guess == "UNCLASSIFIED" else f"guess {action_name(q.guess)}"
        typer.echo(
            f"{i}. {q.title!r}: {q.minutes} min in {q.occurrences} event"
            f"{'s' if q.occurrences != 1 else ''} ({guess}, confidence {q.confidence:.2f})"
        )
    typer.echo('answer one with: rhythm-bridge classify --correct "TITLE" ACTION')


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
    from bridge.cycle.recommend import NoWindow
    from bridge.cycle.recommend import recommend as make
    from bridge.out.snapshot import (
        answer_of,
        no_window_document,
        rationale_now,
        recommendation_document,
        rescheduled_to,
    )

    settings = current_settings()
    store = current_store()
    now = datetime.now(UTC)
    rec = make(store, settings, now)
    if isinstance(rec, NoWindow):
        gap = no_window_document(store, settings, now)
        if as_json:
            # The keys a reader of the recommendation looks at, null; and why.
            print_json(
                {
                    "id": None,
                    "action": None,
                    "window": None,
                    "window_reason": rec.reason,
                    "no_window": gap,
                }
            )
        else:
            nxt = (gap or {}).get("next_window")
            typer.echo(f"nothing recommended: {rec.reason}")
            typer.echo(
                f"next free window: {nxt['start']} to {nxt['end']}"
                if nxt
                else "next free window: none in the calendar for the next days"
            )
        return
    # The slot's recommendation may already be answered: show the answer, as the page does,
    # and the window a Reschedule proposed.
    fb = answer_of(store, rec.id)
    doc = recommendation_document(rec, fb, settings.tz)
    moved = rescheduled_to(store, rec.id) if fb is not None else None
    nxt = recommendation_document(moved, answer_of(store, moved.id), settings.tz) if moved else None
    if as_json:
        print_json({**doc, "rescheduled_to": nxt})
        return
    typer.echo(
        f"#{doc['id']} {doc['date']} {doc['slot_name']}{window_text(doc)}: "
        f"{doc['action']} — {rationale_now(store, doc['rationale'])}"
    )
    if fb is not None:
        typer.echo(f"answered: {fb.response} ({fb.channel})")
    if nxt is not None:
        typer.echo(
            f"rescheduled to: #{nxt['id']} {nxt['date']} {nxt['slot_name']}{window_text(nxt)}: "
            f"{nxt['action']}" + (f" (answered: {nxt['response']})" if nxt["response"] else "")
        )
    elif fb is not None and fb.response == "rescheduled":
        typer.echo("rescheduled to: no free window for it today or tomorrow")


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


@app.command(help=f"Export the meter snapshot document (schema {SNAPSHOT_SCHEMA_ID}).")
def export(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write here: a file, or a folder (then snapshot-YYYYMMDD-HHMMSS.json in it); "
            "default: stdout.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="First local date YYYY-MM-DD (default: the last [export] days)."),
    ] = None,
    training_data: Annotated[
        Path | None,
        typer.Option(
            "--training-data",
            help="Instead: write your answers as a chat-format JSONL fine-tuning set here.",
        ),
    ] = None,
) -> None:
    if training_data is not None:
        from bridge.learning.training_data import write_training_data

        training_data = file_in(training_data, "training-data.jsonl")
        count = write_training_data(current_store(), current_settings(), training_data)
        typer.echo(f"wrote {count} examples to {training_data}")
        return
    from bridge.out.snapshot import build_snapshot, write_snapshot

    first = date_arg(since, "--since")
    doc = build_snapshot(current_store(), current_settings(), datetime.now(UTC), since=first)
    if out is None:
        print_json(doc)
    else:
        name = f"snapshot-{datetime.now():%Y%m%d-%H%M%S}.json"
        typer.echo(f"wrote {write_snapshot(doc, file_in(out, name))}")


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Per source: status, last success, last error, records; database; next runs."""
    from bridge.out.status import collect_status

    doc = collect_status(current_settings(), current_store())
    if as_json:
        print_json(doc)
        return
    from bridge.out.status import status_lines

    settings = current_settings()
    typer.echo("\n".join(status_lines(doc, datetime.now(UTC), settings.tz)))
    for warning in doc["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
