"""Opening the store, keeping its schema current, and idempotent upserts."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, Result, create_engine, event, inspect, or_, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import ORMExecuteState, with_loader_criteria
from sqlalchemy.orm import Session as OrmSession
from sqlmodel import Session, SQLModel, col

from bridge.config import check_person
from bridge.errors import StoreError
from bridge.files import private_file
from bridge.store import models

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# SQLite's default SQLITE_MAX_VARIABLE_NUMBER is 32766 since 3.32; stay well under it.
_MAX_PARAMS = 30_000


def utcnow() -> datetime:
    """Aware UTC now, the form every stored instant takes."""
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """Any datetime as aware UTC (naive input is taken to be UTC already)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL lets the web page read while the daemon writes; NORMAL is durable in WAL mode.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(url: str) -> Engine:
    """An engine for any SQLAlchemy URL; SQLite files get their folder and WAL mode."""
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:":
            # Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files
            # the database file's mode.
            private_file(Path(path).expanduser())
        kwargs["connect_args"] = {"timeout": 30}
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _alembic_config(engine: Engine) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def migrate(engine: Engine, *, person: str = models.DEFAULT_PERSON) -> None:
    """Bring the schema to the newest version; refuse a database from a newer release.

    A database already at the newest version (every start but the first after an upgrade)
    is recognised without alembic: importing it and reading the migration scripts costs
    about 11 MB that a daemon would keep for its whole life.
    """
    current = schema_version(engine)
    if current is not None and current == script_head():
        return
    from alembic import command
    from alembic.script import ScriptDirectory

    cfg = _alembic_config(engine)
    # A store made before people existed becomes this person's (migration i40_people).
    cfg.attributes["person"] = person
    script = ScriptDirectory.from_config(cfg)
    head = script.get_current_head()
    if current == head:
        return
    known = {rev.revision for rev in script.walk_revisions()}
    if current is not None and current not in known:
        raise StoreError(
            f"database schema version {current} is newer than this rhythm-bridge knows "
            f"(newest {head}); upgrade rhythm-bridge or restore a backup"
        )
    command.upgrade(cfg, "head")


def script_head() -> str | None:
    """The newest migration, read from the scripts' `revision` and `down_revision` lines.

    None unless there is exactly one head: then alembic decides (tests/store/test_store.py
    checks that this agrees with alembic's own answer).
    """
    import ast

    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            name = getattr(node.targets[0], "id", None)
            if name not in ("revision", "down_revision"):
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            values = value if isinstance(value, tuple | list) else (value,)
            (revisions if name == "revision" else parents).update(
                v for v in values if isinstance(v, str)
            )
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def schema_version(engine: Engine) -> str | None:
    """The database's schema version (alembic's version table), None when it has none."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        versions = [v for (v,) in conn.exec_driver_sql("SELECT version_num FROM alembic_version")]
    # Several rows are branches, which alembic sorts out; none of ours has any.
    return versions[0] if len(versions) == 1 else None


# The tables of people's rows (every table with a `person`; the registry `people` is not
# one): these are scoped to the session's person.
OWNED: tuple[type[SQLModel], ...] = tuple(
    m
    for m in vars(models).values()
    if isinstance(m, type) and hasattr(m, "__table__") and "person" in m.__table__.columns
)


def person_of(session: OrmSession) -> str:
    """Whose rows this session reads and writes (a Core statement must name it itself)."""
    person = session.info.get("person")
    if not person:  # a session not made by Store.session(): refuse rather than mix people
        raise StoreError("a database session without a person; open it with Store.session()")
    return str(person)


@event.listens_for(Session, "do_orm_execute")
def _only_this_person(state: ORMExecuteState) -> None:
    # Every ORM SELECT, UPDATE and DELETE (session.get, joins and counts included) sees
    # only the session's person's rows: one place, so no query can forget it.
    if state.is_select or state.is_update or state.is_delete:
        person = person_of(state.session)
        state.statement = state.statement.options(
            *(with_loader_criteria(m, m.person == person, include_aliases=True) for m in OWNED)  # type: ignore[attr-defined]
        )


@event.listens_for(Session, "before_flush")
def _file_under_person(session: Session, _context: Any, _instances: Any) -> None:
    person = person_of(session)
    for obj in session.new:
        if isinstance(obj, OWNED):
            obj.person = person


class Store:
    """The database behind one installation, opened for one person of it."""

    def __init__(
        self, url: str, *, create: bool = True, person: str = models.DEFAULT_PERSON
    ) -> None:
        try:
            check_person(person)
        except ValueError as err:
            raise StoreError(str(err)) from None
        self.url = url
        self.person = person
        self.engine = make_engine(url)
        try:
            if create:
                migrate(self.engine, person=person)
        except OperationalError as err:
            self.engine.dispose()
            raise StoreError(f"cannot open database {self.display_url}: {err.orig}") from None
        except BaseException:
            # A store that failed to open must not leave pooled connections behind.
            self.engine.dispose()
            raise

    @property
    def display_url(self) -> str:
        """The URL without a password, safe for logs and status output."""
        return self.engine.url.render_as_string(hide_password=True)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False, info={"person": self.person})

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: everything inside commits together or not at all."""
        with self.session() as session, session.begin():
            yield session

    def count(self, model: type[SQLModel]) -> int:
        from sqlalchemy import func

        with self.session() as session:
            return session.exec(select(func.count()).select_from(model)).one()[0]  # type: ignore[call-overload]

    def table_names(self) -> list[str]:
        return inspect(self.engine).get_table_names()

    def get_meta(self, key: str) -> str | None:
        with self.session() as session:
            row = session.get(models.Meta, (self.person, key))
            return row.value if row else None

    def set_meta(self, session: Session, key: str, value: str) -> None:
        upsert(
            session, models.Meta, [{"key": key, "value": value}], keys=("key",), update=("value",)
        )

    def as_person(self, person: str) -> Store:
        """The same database (one engine, one pool) opened for another of its people."""
        try:
            check_person(person)
        except ValueError as err:
            raise StoreError(str(err)) from None
        view = copy.copy(self)
        view.person = person
        return view

    # The registry of people. It holds names only, so these read it whoever the store is
    # opened for (the household admin lists people without reading anyone's data).
    def people(self) -> list[str]:
        with self.session() as session:
            rows = session.execute(
                select(col(models.Person.name)).order_by(col(models.Person.name))
            )
            return [name for (name,) in rows]

    def add_person(self, person: str) -> bool:
        """Register `person`; False when they already are."""
        check = self.as_person(person)  # the name's rules, in one place
        with check.transaction() as session:
            if session.get(models.Person, person) is not None:
                return False
            session.add(models.Person(name=person, added_at=datetime.now(UTC)))
        return True

    def remove_person(self, person: str) -> dict[str, int]:
        """Delete every row of `person` and their registration, in one transaction;
        returns the rows deleted per table (empty when there was no such person)."""
        view = self.as_person(person)
        deleted: dict[str, int] = {}
        with view.transaction() as session:
            if session.get(models.Person, person) is None:
                return {}
            owned = {m.__table__ for m in OWNED}  # type: ignore[attr-defined]
            # Children before parents; the meter-change notes last, since deleting a
            # person's readings notes their days again.
            tables = [t for t in reversed(SQLModel.metadata.sorted_tables) if t in owned]
            tables.sort(key=lambda t: t.name == "meter_changes")
            for table in tables:
                result = session.execute(table.delete().where(table.c.person == person))
                if count := rows_changed(result):
                    deleted[table.name] = count
            session.delete(session.get(models.Person, person))
        return deleted

    def dispose(self) -> None:
        self.engine.dispose()


def upsert(
    session: Session,
    model: type[SQLModel],
    rows: Sequence[dict[str, Any]],
    *,
    keys: Sequence[str],
    update: Sequence[str] = (),
    touch: Sequence[str] = (),
) -> int:
    """Insert rows; on a natural-key conflict update `update` columns where they differ.

    `touch` columns (e.g. `updated_at`) are written along with a real change but never
    count as one. Returns how many rows were inserted or actually changed, so a re-run
    reports 0.
    Works on SQLite and PostgreSQL (both speak ON CONFLICT).
    """
    if not rows:
        return 0
    # The person is part of every natural key, and always the session's.
    person = person_of(session)
    rows = [{**row, "person": person} for row in rows]
    keys = ("person", *keys)
    table = model.__table__  # type: ignore[attr-defined]
    dialect = session.get_bind().dialect.name
    # The two dialects' INSERTs share the ON CONFLICT API but no common type.
    stmt: Any
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        stmt = sqlite_insert(table)
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        stmt = postgresql_insert(table)
    else:  # pragma: no cover - other backends are not supported for writing
        raise StoreError(f"upsert is not supported on {dialect}; use SQLite or PostgreSQL")
    if update:
        stmt = stmt.on_conflict_do_update(
            index_elements=list(keys),
            set_={c: stmt.excluded[c] for c in (*update, *touch)},
            where=or_(*(table.c[c].is_distinct_from(stmt.excluded[c]) for c in update)),
        )
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=list(keys))
    # RETURNING yields exactly the rows inserted or changed on both backends; rowcount
    # does not (psycopg's executemany reports only the last statement's count).
    stmt = stmt.returning(table.c[keys[0]])
    per_chunk = max(1, _MAX_PARAMS // max(1, len(rows[0])))
    changed = 0
    conn = session.connection()
    for i in range(0, len(rows), per_chunk):
        changed += len(conn.execute(stmt, list(rows[i : i + per_chunk])).all())
    return changed


# One encoder for every call: a history backfill writes thousands of provenance documents,
# and json.dumps builds a new encoder (and checks for cycles, which plain data cannot have)
# each time.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), default=str, check_circular=False
)


def dumps(value: Any) -> str:
    """Compact, stable JSON for the TEXT columns."""
    return _ENCODER.encode(value)


def rows_changed(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE changed (a session types its result as a plain
    Result, although a DML statement always yields a cursor result)."""
    return max(0, cast("CursorResult[Any]", result).rowcount or 0)
