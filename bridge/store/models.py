"""The tables. Every table a connector writes has a natural key, so re-running is harmless.

Instants are aware UTC datetimes (sqlmodel's UTCDateTime refuses naive ones) plus the
source's UTC offset in minutes, so local wall time can be rebuilt as the source saw it.

Every row belongs to one person (`person`, first in every natural key): a household or a
study shares one database, and a Store opened for a person reads and writes only that
person's rows (bridge.store.db scopes every ORM statement; Core statements name it).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import Column, Index, Text, UniqueConstraint, false, text
from sqlmodel import Field, SQLModel

# The person an existing one-person store's rows become, and whom a Store serves by default.
from bridge.config import DEFAULT_PERSON as DEFAULT_PERSON
from bridge.config import PERSON_MAX as PERSON_MAX


def person_field() -> Any:
    # No default: a row without its person is refused by the database (NOT NULL), never
    # filed under someone. The Store fills it in on every write (bridge.store.db).
    return Field(max_length=PERSON_MAX)


class Person(SQLModel, table=True):
    """A person this installation keeps data for: the registry `person add|list|remove`
    keeps. It holds no health data, so the household's admin may read it."""

    __tablename__ = "people"

    name: str = Field(primary_key=True, max_length=PERSON_MAX)
    added_at: datetime


class Reading(SQLModel, table=True):
    """One physiological measurement or interval from one source and origin device/app."""

    __tablename__ = "readings"
    __table_args__ = (
        UniqueConstraint(
            "person",
            "source",
            "metric",
            "origin",
            "start_utc",
            "end_utc",
            "label",
            name="uq_readings_natural",
        ),
        Index("ix_readings_metric_start", "person", "metric", "start_utc"),
        # Only revised facts are looked up by revision; final samples (most rows, all
        # under one key) would only make every insert dearer.
        Index(
            "ix_readings_revision",
            "person",
            "source",
            "revision",
            sqlite_where=text("revision != ''"),
            postgresql_where=text("revision != ''"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    source: str = Field(max_length=32)  # connector: apple_health, whoop, garmin, ...
    metric: str = Field(max_length=48)  # steps, sleep, hrv_sdnn, resting_hr, ...
    origin: str = Field(default="", max_length=200)  # device/app that measured it
    start_utc: datetime
    end_utc: datetime
    utc_offset_min: int = 0
    value: float | None = None
    unit: str = Field(default="", max_length=32)
    label: str = Field(default="", max_length=64)  # category, e.g. sleep stage "deep"
    device: str = Field(default="", max_length=300)
    # The fact this row is a version of, when its source revises it ("" = final);
    # connectors/base.py lists the keys. Rows of one (source, revision) are replaced as one.
    revision: str = Field(default="", max_length=96)
    imported_at: datetime


class CalendarEvent(SQLModel, table=True):
    """One calendar event instance (a recurring series is stored as its instances)."""

    __tablename__ = "calendar_events"
    __table_args__ = (
        UniqueConstraint(
            "person", "source", "calendar_id", "uid", "recurrence_id", name="uq_events_natural"
        ),
        Index("ix_events_start", "person", "start_utc"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    source: str = Field(max_length=32)
    calendar_id: str = Field(max_length=300)
    uid: str = Field(max_length=300)
    recurrence_id: str = Field(default="", max_length=64)  # "" for single events
    title: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    start_utc: datetime
    end_utc: datetime
    utc_offset_min: int = 0
    all_day: bool = False
    status: str = Field(default="confirmed", max_length=16)  # confirmed|tentative|cancelled
    transparency: str = Field(default="opaque", max_length=16)  # opaque = busy
    event_type: str = Field(default="default", max_length=32)  # Google eventType
    attendee_count: int = 0
    self_response: str = Field(default="", max_length=16)
    # Where it happens (the source's free text) and whether the person organizes it: what
    # labels an unknown title ("Aquapark", "Sala 2.14") and tells one's own meeting apart.
    location: str = Field(default="", max_length=300, sa_column_kwargs={"server_default": ""})
    organized_by_me: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    content_hash: str = Field(default="", max_length=64)
    action: str | None = Field(default=None, max_length=24)
    action_confidence: float | None = None
    action_layer: str | None = Field(default=None, max_length=16)
    classified_hash: str = Field(default="", max_length=64)
    updated_at: datetime


class SyncState(SQLModel, table=True):
    """Where one source/stream/partition stands: cursor, last success, last error, status."""

    __tablename__ = "sync_state"
    __table_args__ = (
        UniqueConstraint("person", "source", "stream", "partition", name="uq_sync_state"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    source: str = Field(max_length=32)
    stream: str = Field(default="", max_length=48)
    partition: str = Field(default="", max_length=300)
    cursor: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    status: str = Field(default="never", max_length=24)  # never|ok|error|reauth_required|...
    last_attempt_at: datetime | None = None
    last_success_at: datetime | None = None
    last_error_at: datetime | None = None
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    last_records: int = 0
    records_total: int = 0
    retry_after: datetime | None = None


class ImportedFile(SQLModel, table=True):
    """A file imported by content hash, so a watched folder imports each version once."""

    __tablename__ = "imported_files"
    __table_args__ = (UniqueConstraint("person", "kind", "sha256", name="uq_imported_files"),)

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    kind: str = Field(max_length=32)
    sha256: str = Field(max_length=64)
    path: str = Field(sa_column=Column(Text, nullable=False))
    size: int
    records: int
    new_records: int
    imported_at: datetime


class MeterSnapshot(SQLModel, table=True):
    """The five meters of one local slot, each nullable, with confidence and provenance."""

    __tablename__ = "meter_snapshots"
    __table_args__ = (UniqueConstraint("person", "local_date", "slot", name="uq_meter_slot"),)

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    local_date: date
    slot: int
    day: int
    timestep: int
    vitality: float | None = None
    vitality_confidence: float | None = None
    cognition: float | None = None
    cognition_confidence: float | None = None
    progress: float | None = None
    progress_confidence: float | None = None
    serenity: float | None = None
    serenity_confidence: float | None = None
    connection: float | None = None
    connection_confidence: float | None = None
    # JSON: {meter: {"inputs": [...], "weights": {...}} or {"reason": "..."}}
    provenance: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))
    # JSON: {meter: change since the previous slot, or null}
    deltas: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))
    mapping_version: str = Field(default="", max_length=32)
    computed_at: datetime


class MeterChange(SQLModel, table=True):
    """A UTC day whose readings ("r") or calendar events ("e") were written since the meter
    step last looked: kept by triggers on those tables (migration i17_meter_changes), taken
    and then deleted by the meter step (bridge.cycle.meter_changes)."""

    __tablename__ = "meter_changes"
    __table_args__ = (
        Index("ix_meter_changes_day", "person", "kind", "day", "taken"),
        # A day waits once: each written row's trigger is one probe of this index
        # (migration i18_cheaper_notes).
        Index(
            "ux_meter_changes_waiting",
            "person",
            "kind",
            "day",
            unique=True,
            sqlite_where=text("taken = 0"),
            postgresql_where=text("NOT taken"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    kind: str = Field(max_length=1)
    day: str = Field(max_length=10)  # YYYY-MM-DD, UTC
    taken: bool = False


class Recommendation(SQLModel, table=True):
    """What the runner recommended for one slot, with what it saw and believed."""

    __tablename__ = "recommendations"
    __table_args__ = (
        UniqueConstraint("person", "local_date", "slot", name="uq_recommendation_slot"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    local_date: date
    slot: int
    timestep: int
    action: str = Field(max_length=24)
    belief: str = Field(default="null", max_length=64)  # JSON [S, M, W] or null
    # JSON [sd S, sd M, sd W]: the runner's posterior sd per axis; null if it states none
    belief_sd: str | None = Field(default=None, max_length=64)
    # The runner's own P(accept) of the action as it recommended it, before any per-person
    # correction (bridge.runner.recalibrate fits the correction on it); null if it states none
    model_accept: float | None = None
    rationale: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    runner: str = Field(max_length=32)
    runner_version: str = Field(default="", max_length=32)
    observation: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))
    fallback_reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # The free calendar window the action is proposed for (null: none, see window_reason;
    # also for recommendations made before windows existed).
    window_start: datetime | None = None
    window_end: datetime | None = None
    window_reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # Set on the proposal a Reschedule made: the id of the recommendation it replaces.
    rescheduled_from: int | None = None
    created_at: datetime


class Feedback(SQLModel, table=True):
    """The person's answer to one recommendation (one answer each; repeats are no-ops)."""

    __tablename__ = "feedback"
    __table_args__ = (
        UniqueConstraint("person", "recommendation_id", name="uq_feedback_recommendation"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    recommendation_id: int = Field(foreign_key="recommendations.id")
    response: str = Field(max_length=16)  # accepted|ignored|rescheduled|expired
    reward: float
    channel: str = Field(default="cli", max_length=16)  # cli|web|ntfy|calendar|timeout
    created_at: datetime


class Meta(SQLModel, table=True):
    """Small key/value facts about the store (last cycle time, ...)."""

    __tablename__ = "meta"

    person: str = Field(primary_key=True, max_length=PERSON_MAX)
    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


class Notification(SQLModel, table=True):
    """One notification per recommendation and channel, claimed before it is sent."""

    __tablename__ = "notifications"
    __table_args__ = (
        UniqueConstraint("person", "recommendation_id", "channel", name="uq_notification_channel"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    recommendation_id: int = Field(foreign_key="recommendations.id")
    channel: str = Field(max_length=16)  # ntfy|webhook
    status: str = Field(default="sending", max_length=16)  # sending|sent|failed
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime
    sent_at: datetime | None = None


class GoogleWrite(SQLModel, table=True):
    """An event written to the person's Google calendar for a recommendation (opt-in).

    What Google holds as far as we know: `state` present (with the content written) or
    absent (deleted by us). What it should hold is derived from the answers on every push,
    so an answer is never lost between a failed write and the next cycle.
    """

    __tablename__ = "google_writes"
    __table_args__ = (UniqueConstraint("person", "recommendation_id", name="uq_google_write_rec"),)

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    recommendation_id: int = Field(foreign_key="recommendations.id")
    calendar_id: str = Field(max_length=300)
    event_id: str = Field(max_length=64)
    state: str = Field(max_length=16)  # present|absent
    content_hash: str = Field(default="", max_length=64)
    updated_at: datetime


class ImplicitWatch(SQLModel, table=True):
    """An event of the recommended type that sat in the recommended window when last seen.

    Implicit feedback compares the calendar against these rows: a watched event that moved
    out of the window is a reschedule; a matching event that is not watched moved in.
    """

    __tablename__ = "implicit_watch"
    __table_args__ = (
        UniqueConstraint("person", "recommendation_id", "event_id", name="uq_implicit_watch"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    recommendation_id: int = Field(foreign_key="recommendations.id")
    event_id: int
    start_utc: datetime
    seen_at: datetime


class ClassifierCorrection(SQLModel, table=True):
    """A title pattern the person labelled by hand; it wins over every other layer."""

    __tablename__ = "classifier_corrections"
    __table_args__ = (
        UniqueConstraint("person", "pattern", name="uq_classifier_corrections_pattern"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    pattern: str = Field(max_length=500)  # mappings.classifier_overrides.title_pattern
    title: str = Field(sa_column=Column(Text, nullable=False))  # as the person typed it
    action: str = Field(max_length=24)
    channel: str = Field(default="cli", max_length=16)  # cli|web
    created_at: datetime
    updated_at: datetime


class LLMAnswer(SQLModel, table=True):
    """A cached answer of the optional LLM layer, per normalized title and model."""

    __tablename__ = "classifier_llm_cache"
    __table_args__ = (
        UniqueConstraint("person", "model", "title_key", name="uq_classifier_llm_cache"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    model: str = Field(max_length=200)
    title_key: str = Field(max_length=500)
    action: str = Field(max_length=24)
    confidence: float
    created_at: datetime


class Task(SQLModel, table=True):
    """One to-do as its source has it now; how it got there is in `task_history`."""

    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("person", "source", "list_id", "uid", name="uq_tasks_natural"),
        Index("ix_tasks_due", "person", "due_utc"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    source: str = Field(max_length=32)  # google_tasks, ics
    list_id: str = Field(max_length=300)
    uid: str = Field(max_length=300)
    title: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    status: str = Field(default="open", max_length=16)  # open|done|cancelled
    # The deadline instant; a date-only due is the end of that local day (due_all_day).
    due_utc: datetime | None = None
    due_all_day: bool = False
    created_utc: datetime | None = None
    completed_utc: datetime | None = None
    deleted: bool = False
    priority: int = 0  # iCalendar PRIORITY: 1 highest .. 9 lowest, 0 undefined
    percent: int | None = None
    parent: str = Field(default="", max_length=300)
    content_hash: str = Field(default="", max_length=64)
    action: str | None = Field(default=None, max_length=24)
    action_confidence: float | None = None
    classified_hash: str = Field(default="", max_length=64)
    updated_at: datetime


class TaskChange(SQLModel, table=True):
    """One change of a task: created, due, completed, uncompleted, deleted, restored.

    `at_utc` is when it happened (the source's own time where it gives one, else when the
    bridge first saw it), so completion per day can be counted for any past date.
    """

    __tablename__ = "task_history"
    __table_args__ = (
        UniqueConstraint("person", "task_id", "kind", "at_utc", name="uq_task_history"),
        Index("ix_task_history_at", "person", "at_utc"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    task_id: int = Field(foreign_key="tasks.id")
    kind: str = Field(max_length=16)
    at_utc: datetime
    due_utc: datetime | None = None  # the new due date of a "due" change
    recorded_at: datetime


class CheckIn(SQLModel, table=True):
    """How the person said they feel: one item (energy, stress, ...) in one local slot.

    The yardstick of the meters, never their input (mappings/checkins.py). A second answer
    for the same item and slot replaces the first. `score` is the value rescaled to [0, 1]
    from the scale it was given on, in the item's own direction.
    """

    __tablename__ = "checkins"
    __table_args__ = (
        UniqueConstraint("person", "local_date", "slot", "item", name="uq_checkins_slot_item"),
    )

    id: int | None = Field(default=None, primary_key=True)
    person: str = person_field()
    local_date: date
    slot: int
    item: str = Field(max_length=32)
    at_utc: datetime  # when it was said: meters compared with it use only data before this
    utc_offset_min: int = 0
    value: float  # as given, on scale_min..scale_max
    scale_min: float
    scale_max: float
    score: float
    source: str = Field(default="cli", max_length=32)  # cli, web, mqtt, ntfy, csv
    recorded_at: datetime
