"""readings.revision: facts a source revises are replaced, not added; repair earlier copies

Revision ID: i26_revisions
Revises: i24_tasks

Before this, a Garmin day still growing was stored again with every sync (the daily total
is stored over [day start, last upload], and the end moved), and a re-scored or edited
night kept its earlier stage rows beside the new ones (stages are laid back to back from
sleep start, so new totals mean new ends). This repair keeps the latest version of each:

- a day's aggregate: rows of one source, metric, origin and label starting at the same
  instant with different ends are versions of one total; the newest row (highest id:
  every version with a new end was inserted) stays;
- a night: overlapping in-bed spans of one source and origin are versions of one night;
  the newest stays, with the score and breathing rate of its own span. Its stages are
  rebuilt as the sources lay them: deep, core, rem, awake back to back from sleep start,
  at each step the newest row that starts where the last one ended.

Only the sources that pack stages and report growing days (garmin, whoop) are touched;
every other source's rows are final samples. The count is logged once.
"""

import logging
from collections import defaultdict

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "i26_revisions"
down_revision = "i24_tasks"
branch_labels = None
depends_on = None

log = logging.getLogger("rhythm_bridge.store")

REVISED_SOURCES = ("garmin", "whoop")
STAGE_ORDER = ("deep", "core", "rem", "awake")
NIGHT_METRICS = ("sleep", "sleep_score", "respiratory_rate")

readings = sa.table(
    "readings",
    sa.column("id", sa.Integer),
    sa.column("source", sa.String),
    sa.column("metric", sa.String),
    sa.column("origin", sa.String),
    sa.column("label", sa.String),
    # Compared, never computed with: raw text on SQLite sorts like the instants it holds.
    sa.column("start_utc"),
    sa.column("end_utc"),
)


def upgrade() -> None:
    with op.batch_alter_table("readings") as batch:
        batch.add_column(
            sa.Column(
                "revision",
                sqlmodel.sql.sqltypes.AutoString(length=96),
                nullable=False,
                server_default="",
            )
        )
        batch.create_index("ix_readings_revision", ["source", "revision"], unique=False)
    doomed = earlier_versions(op.get_bind())
    for i in range(0, len(doomed), 500):
        op.execute(readings.delete().where(readings.c.id.in_(doomed[i : i + 500])))
    if doomed:
        log.warning(
            "store repaired: %d readings were earlier versions of a day or night stored "
            "beside the latest one (growing days, re-scored nights); the latest were kept",
            len(doomed),
        )


def earlier_versions(conn: sa.engine.Connection) -> list[int]:
    rows = conn.execute(
        sa.select(
            readings.c.id,
            readings.c.source,
            readings.c.metric,
            readings.c.origin,
            readings.c.label,
            readings.c.start_utc,
            readings.c.end_utc,
        ).where(readings.c.source.in_(REVISED_SOURCES))
    ).all()
    doomed: set[int] = set()
    # Day aggregates: one start, several ends.
    totals: dict[tuple, list] = defaultdict(list)
    for row in rows:
        if row.metric not in NIGHT_METRICS and row.start_utc != row.end_utc:
            totals[(row.source, row.metric, row.origin, row.label, row.start_utc)].append(row)
    for versions in totals.values():
        if len({r.end_utc for r in versions}) > 1:
            newest = max(r.id for r in versions)
            doomed.update(r.id for r in versions if r.id != newest)
    # Nights: overlapping in-bed spans are one night.
    by_origin: dict[tuple, list] = defaultdict(list)
    for row in rows:
        if row.metric in NIGHT_METRICS:
            by_origin[(row.source, row.origin)].append(row)
    for night_rows in by_origin.values():
        beds = sorted(
            (r for r in night_rows if r.metric == "sleep" and r.label == "in_bed"),
            key=lambda r: (r.start_utc, r.id),
        )
        nights: list[list] = []
        for bed in beds:
            if nights and bed.start_utc < max(b.end_utc for b in nights[-1]):
                nights[-1].append(bed)
            else:
                nights.append([bed])
        for versions in nights:
            kept = max(versions, key=lambda r: r.id)
            lo = min(r.start_utc for r in versions)
            hi = max(r.end_utc for r in versions)
            for old in versions:
                if old.id == kept.id:
                    continue
                doomed.add(old.id)
                for r in night_rows:
                    if (r.metric == "sleep_score" and r.start_utc == old.end_utc != kept.end_utc) or (
                        r.metric == "respiratory_rate"
                        and (r.start_utc, r.end_utc) == (old.start_utc, old.end_utc)
                        and (r.start_utc, r.end_utc) != (kept.start_utc, kept.end_utc)
                    ):
                        doomed.add(r.id)
            stages = [
                r
                for r in night_rows
                if r.metric == "sleep" and r.label != "in_bed" and lo <= r.start_utc < hi
            ]
            chain: set[int] = set()
            cursor = kept.start_utc
            for label in STAGE_ORDER:
                here = [r for r in stages if r.label == label and r.start_utc == cursor]
                if here:
                    step = max(here, key=lambda r: r.id)
                    chain.add(step.id)
                    cursor = step.end_utc
            doomed.update(r.id for r in stages if r.id not in chain)
    return sorted(doomed)


def downgrade() -> None:
    with op.batch_alter_table("readings") as batch:
        batch.drop_index("ix_readings_revision")
        batch.drop_column("revision")
