"""Many people on PostgreSQL: syncs, cycles and refits as procrastinate jobs.

`rhythm-bridge worker` runs this on one or several machines against one database. What
keeps N workers from stepping on each other is procrastinate's, not ours:

- periodic tasks (`schedule`, `cycles`, `refits`, `stalled`) are deferred once per period
  whatever the number of workers (procrastinate records each period's defer);
- a sync job carries `lock = queueing_lock = "sync:PERSON:SOURCE"`: one account is queued
  at most once and never pulled by two workers at once (WHOOP rotates its refresh token
  on every use, so two concurrent refreshes would lose the account);
- a sync that hit a 429 raises `RetryLater`, which `WaitForProvider` turns into a retry at
  the time the provider named (Retry-After);
- a worker that dies (SIGKILL, lost machine) stops its heartbeat; `stalled` puts its jobs
  back in the queue, where the lock they hold passes to the next worker.

Every provider request of any worker draws on one budget per provider kept in PostgreSQL
(pyrate-limiter's PostgresBucket, one table per provider, every documented window), hooked
into `connectors.http.spend`. The polling interval of each source is stretched so that all
people's syncs fit in its daily quota: see `poll_interval`.

Imported only by `rhythm-bridge worker`: the one-person default (SQLite, APScheduler in
one process) never loads procrastinate.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bridge.config import Settings, WorkersSettings
from bridge.daemon import heap
from bridge.errors import ConfigError, RateLimited
from bridge.store import Store

log = logging.getLogger("rhythm_bridge.worker")

WINDOW_PAD = 1.02
EARLY = 0.9
SCHEMA_HINT = "run `rhythm-bridge worker --apply-schema` once"


def needs_postgres(settings: Settings) -> str:
    """The libpq URL of the database, or ConfigError when it is not PostgreSQL."""
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url)
    if url.get_backend_name() != "postgresql":
        raise ConfigError(
            "rhythm-bridge worker needs [database] url on PostgreSQL "
            "(postgresql+psycopg://...); one person on SQLite runs `rhythm-bridge run`"
        )
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


# --- the polling interval -----------------------------------------------------------------


def poll_interval(settings: Settings, source: str, people: int) -> timedelta:
    """How often a person's `source` is pulled (`settings`: that person's view): its
    configured interval, stretched so
    that every person's syncs fit in the provider's tightest window with a margin:

        interval >= requests_per_sync * people * window / (limit * quota_margin)

    for every [limit, window] of the provider (WHOOP: 5 * 1,000 * 86,400 s / (10,000 *
    0.8) = 15 h for 1,000 people; 36 min for 40 people, so the configured hour stands).
    """
    w = settings.workers
    configured = timedelta(minutes=getattr(settings.sources, source).interval_minutes)
    per_sync = w.requests_per_sync.get(source, 1)
    needed = max(
        (per_sync * max(1, people) * window / (limit * w.quota_margin))
        for limit, window in w.limits.get(source, [(1, 0.0)])
    )
    return max(configured, timedelta(seconds=math.ceil(needed)))


# --- the shared budget --------------------------------------------------------------------


class SharedBudget:
    """One pyrate-limiter bucket per provider in PostgreSQL, shared by every worker."""

    def __init__(self, libpq_url: str, settings: Settings) -> None:
        from psycopg_pool import ConnectionPool
        from pyrate_limiter import Limiter, PostgresBucket, Rate

        w = settings.workers
        self.wait = w.budget_wait_seconds
        self.pool = ConnectionPool(libpq_url, min_size=1, max_size=max(2, w.concurrency), open=True)
        self.limiters: dict[str, Any] = {}
        for provider, windows in w.limits.items():
            # The provider counts a request when it arrives, we when it leaves: a window a
            # little longer here keeps the jitter between the two inside the provider's.
            rates = [Rate(int(limit), int(window * 1000 * WINDOW_PAD)) for limit, window in windows]
            bucket = PostgresBucket(self.pool, f"rb_budget_{provider}", rates)
            self.limiters[provider] = Limiter(bucket)

    def __call__(self, provider: str) -> None:
        limiter = self.limiters.get(provider)
        if limiter is None:
            return
        if not limiter.try_acquire(provider, blocking=True, timeout=self.wait):
            raise RateLimited(
                f"{provider}: the shared request budget is spent for now; retry in "
                f"{self.wait:.0f}s",
                retry_after=self.wait,
            )

    def close(self) -> None:
        self.pool.close()


# --- the app and its tasks ------------------------------------------------------------------


class RetryLater(Exception):
    """A sync the provider asked to wait: retried no sooner than `seconds` from now."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"retry in {seconds:.0f}s")
        self.seconds = seconds


@dataclass
class Context:
    """What the tasks of this process share (set by `run_worker` or a test)."""

    settings: Settings
    store: Store


_context: Context | None = None
_lock = threading.Lock()


def context() -> Context:
    if _context is None:
        raise RuntimeError("the worker context is not set; start it with run_worker()")
    return _context


def set_context(settings: Settings, store: Store) -> None:
    global _context
    _context = Context(settings, store)


def build_app(libpq_url: str, w: WorkersSettings) -> Any:
    """The procrastinate app with rhythm-bridge's tasks, on `libpq_url`; the periodic
    tasks' crons are `w`'s (procrastinate registers them with the tasks)."""
    from procrastinate import App, BaseRetryStrategy, PsycopgConnector, RetryDecision

    class WaitForProvider(BaseRetryStrategy):
        """A 429 (or a spent shared budget) is retried when the provider said, and only
        then; everything else is left failed for `status` to show."""

        def get_retry_decision(self, *, exception: BaseException, job: Any) -> Any:
            if isinstance(exception, RetryLater):
                return RetryDecision(retry_in={"seconds": math.ceil(exception.seconds)})
            return None

    app = App(connector=PsycopgConnector(conninfo=libpq_url))

    @app.task(name="rb.sync", retry=WaitForProvider(), pass_context=False)
    def sync(person: str, source: str) -> str:
        try:
            return sync_account(person, source)
        finally:
            # A pull's pages are freed on the job's thread; give that memory back now
            # rather than let each thread's arena keep its high-water mark.
            heap.trim_heap()

    @app.task(name="rb.cycle")
    def cycle(person: str) -> str:
        return cycle_person(person)

    @app.task(name="rb.refit")
    def refit(person: str) -> str:
        return refit_person(person)

    async def defer(task: Any, lock: str, **kwargs: Any) -> bool:
        from procrastinate.exceptions import AlreadyEnqueued

        try:
            await task.configure(lock=lock, queueing_lock=lock).defer_async(**kwargs)
        except AlreadyEnqueued:
            return False
        return True

    async def schedule_syncs(timestamp: int) -> int:
        import asyncio

        due = await asyncio.to_thread(due_syncs, datetime.fromtimestamp(timestamp, UTC))
        queued = 0
        for person, source in due:
            queued += await defer(sync, f"sync:{person}:{source}", person=person, source=source)
        return queued

    async def each_person(task: Any, kind: str) -> int:
        import asyncio

        people = await asyncio.to_thread(lambda: context().store.people())
        return sum([await defer(task, f"{kind}:{p}", person=p) for p in people])

    async def cycles(timestamp: int) -> int:
        return await each_person(cycle, "cycle")

    async def refits(timestamp: int) -> int:
        return await each_person(refit, "refit")

    async def stalled(timestamp: int) -> int:
        return await take_over_stalled(app)

    # The periodic tasks go before the queued syncs (higher priority first): taking over
    # a dead worker's jobs must not wait behind the backlog it left.
    app.periodic(cron=w.schedule_cron, periodic_id="syncs")(
        app.task(name="rb.schedule", queueing_lock="rb.schedule", priority=50)(schedule_syncs)
    )
    app.periodic(cron=w.cycle_cron, periodic_id="cycles")(
        app.task(name="rb.cycles", queueing_lock="rb.cycles", priority=10)(cycles)
    )
    app.periodic(cron="17 3 * * *", periodic_id="refits")(
        app.task(name="rb.refits", queueing_lock="rb.refits", priority=10)(refits)
    )
    app.periodic(cron=w.stalled_cron, periodic_id="stalled")(
        app.task(name="rb.stalled", queueing_lock="rb.stalled", priority=100)(stalled)
    )
    app.rb_sync = sync  # type: ignore[attr-defined]
    return app


async def take_over_stalled(app: Any) -> int:
    """Put the jobs of workers whose heartbeat stopped back in the queue; the lock they
    hold is released with them, so the account is pulled again, by one worker."""
    from procrastinate.exceptions import UniqueViolation
    from procrastinate.jobs import Status

    manager = app.job_manager
    seconds = context().settings.workers.stalled_after_seconds
    count = 0
    for job in await manager.get_stalled_jobs(seconds_since_heartbeat=seconds):
        log.warning("job %s (%s) of a dead worker is taken over", job.id, job.task_name)
        try:
            await manager.retry_job(job)
        except UniqueViolation:
            # The account is queued again already (its queueing lock is taken): end this
            # one, which releases its lock so that the queued one can run.
            await manager.finish_job(job, status=Status.FAILED, delete_job=False)
        count += 1
    return count


def make_app(settings: Settings) -> Any:
    return build_app(needs_postgres(settings), settings.workers)


# --- what the tasks do ------------------------------------------------------------------------


def _person_here(store: Store, person: str) -> bool:
    if person in store.people():
        return True
    # Removed while the job waited: nothing of theirs may be written back.
    log.info("person %s is gone; their queued job ends here", person)
    return False


def sync_account(person: str, source: str) -> str:
    """Pull one person's source once; raises RetryLater on a 429 (the job is retried then)."""
    from bridge.intake.sources import read_context, run_source

    ctx = context()
    if not _person_here(ctx.store, person):
        return "gone"
    settings = ctx.settings.for_person(person)
    store = ctx.store.as_person(person)
    now = datetime.now(UTC)
    outcome = run_source(store, settings, source, read_context(settings, now))
    if outcome.status == "rate_limited" and outcome.retry_after:
        raise RetryLater(outcome.retry_after)
    return outcome.status


def cycle_person(person: str) -> str:
    """One person's cycle without its syncs (the sync jobs pull): classify, meters,
    recommendation, outputs. The meter step runs in a child, so no worker keeps pandas."""
    from bridge.cycle.run import run_cycle

    ctx = context()
    if not _person_here(ctx.store, person):
        return "gone"
    run_cycle(
        ctx.settings.for_person(person), ctx.store.as_person(person), only=[], meters_apart=True
    )
    return "ok"


def refit_person(person: str) -> str:
    from bridge.daemon.scheduler import _refit_adapter

    ctx = context()
    if not _person_here(ctx.store, person):
        return "gone"
    _refit_adapter(ctx.settings.for_person(person), ctx.store.as_person(person))
    return "ok"


def due_syncs(now: datetime) -> list[tuple[str, str]]:
    """Every (person, source) due now, with the quota-derived intervals. One read of every
    person's sync summaries, not one per person."""
    from sqlalchemy import select

    from bridge.intake.sources import enabled_sources, is_due
    from bridge.store.models import SyncState

    ctx = context()
    people = ctx.store.people()
    if not people:
        return []
    table = SyncState.__table__  # type: ignore[attr-defined]
    with ctx.store.engine.connect() as conn:
        rows = conn.execute(
            select(table).where(table.c.person.in_(people), table.c.stream == "")
        ).all()
    states = {(r.person, r.source): SyncState.model_validate(dict(r._mapping)) for r in rows}
    views = {p: ctx.settings.for_person(p) for p in people}
    counts: dict[str, int] = {}
    for settings in views.values():
        for source in enabled_sources(settings):
            counts[source] = counts.get(source, 0) + 1
    due = []
    for person, settings in views.items():
        for source in enabled_sources(settings):
            state = states.get((person, source))
            # Queued a tenth early: its wait in the queue then still ends within the
            # period (quota_margin leaves room for the extra tenth).
            interval = poll_interval(settings, source, counts[source]) * EARLY
            if state is None or is_due(
                ctx.store, settings, source, now, interval=interval, state=state
            ):
                due.append((person, source))
    return due


# --- running ------------------------------------------------------------------------------------


def apply_schema(settings: Settings) -> None:
    """procrastinate's tables and functions (once per database; idempotent here)."""
    import psycopg

    url = needs_postgres(settings)
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
        if exists and exists[0]:
            return
    app = make_app(settings)
    with app.open():
        app.schema_manager.apply_schema()


def schema_applied(settings: Settings) -> bool:
    import psycopg

    with psycopg.connect(needs_postgres(settings), autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
    return bool(row and row[0])


def run_worker(
    settings: Settings,
    store: Store,
    *,
    concurrency: int | None = None,
    wait: bool = True,
    install_budget: bool = True,
    before: Callable[[Any], None] | None = None,
) -> None:
    """Run this process's worker until SIGINT/SIGTERM (or, with wait=False, until the queue
    is empty)."""
    from connectors import http

    if not schema_applied(settings):
        raise ConfigError(f"the job queue's tables are missing in the database; {SCHEMA_HINT}")
    heap.fewer_arenas()
    heap.tune_heap()
    set_context(settings, store)
    budget = SharedBudget(needs_postgres(settings), settings) if install_budget else None
    http.budget = budget
    app = make_app(settings)
    try:
        with app.open():
            if before is not None:
                before(app)
            app.run_worker(
                concurrency=concurrency or settings.workers.concurrency,
                wait=wait,
                install_signal_handlers=wait,
                update_heartbeat_interval=max(1.0, settings.workers.stalled_after_seconds / 6),
                stalled_worker_timeout=settings.workers.stalled_after_seconds,
            )
    finally:
        http.budget = None
        if budget is not None:
            budget.close()
