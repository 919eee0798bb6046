"""readings: Body Battery from a Garmin export under the Garmin API's labels

Revision ID: i38_body_battery_labels
Revises: i42_event_place

The export connector stored the value at wake-up as "atwaketime" over the whole day and
the value at the watch's last sync as "mostrecent" (and any other stat type Garmin wrote,
lower-cased); the meters read "at_wake", dated at the wake-up, as the API connector
stores it, so an export's Body Battery never reached them. Rows already stored become
what the connector now writes when the export does not say when the person woke: "at_wake"
at the day's start. Stat types the connector no longer keeps (most recent, start or end of
day: values at no moment the export states) go; a re-import writes the day as one fact
(`day:<date>`) and replaces these rows with the wake-up's own time where the export has it.

Downgrade keeps the rows: the earlier code reads "at_wake" as well.
"""

import logging

import sqlalchemy as sa
from alembic import op

revision = "i38_body_battery_labels"
down_revision = "i42_event_place"
branch_labels = None
depends_on = None

log = logging.getLogger("rhythm_bridge.store")

SOURCE = "garmin_export"
KEPT = ("at_wake", "highest", "lowest")

readings = sa.table(
    "readings",
    sa.column("id", sa.Integer),
    sa.column("person", sa.String),
    sa.column("source", sa.String),
    sa.column("metric", sa.String),
    sa.column("origin", sa.String),
    sa.column("label", sa.String),
    sa.column("start_utc"),
    sa.column("end_utc"),
)


def upgrade() -> None:
    conn = op.get_bind()
    mine = sa.and_(readings.c.source == SOURCE, readings.c.metric == "body_battery")
    old = sa.and_(mine, readings.c.label == "atwaketime")
    same = readings.alias("same")
    # A row already at the new key (none unless written by hand) wins over the old one.
    taken = (
        sa.select(sa.literal(1))
        .where(
            same.c.person == readings.c.person,
            same.c.source == readings.c.source,
            same.c.metric == readings.c.metric,
            same.c.origin == readings.c.origin,
            same.c.label == "at_wake",
            same.c.start_utc == readings.c.start_utc,
            same.c.end_utc == readings.c.start_utc,
        )
        .exists()
    )
    dropped = conn.execute(sa.delete(readings).where(old, taken)).rowcount or 0
    moved = (
        conn.execute(
            sa.update(readings).where(old).values(label="at_wake", end_utc=readings.c.start_utc)
        ).rowcount
        or 0
    )
    dropped += (
        conn.execute(sa.delete(readings).where(mine, readings.c.label.notin_(KEPT))).rowcount or 0
    )
    if moved or dropped:
        log.info(
            "Garmin export Body Battery: %d readings relabelled at_wake, %d without a moment "
            "removed",
            moved,
            dropped,
        )


def downgrade() -> None:
    pass
