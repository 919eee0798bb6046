"""Generate the bundled demo data: an Apple Health export, a calendar and a to-do list.

    python -m bridge.sample_data.generate [OUT_DIR]

Deterministic (fixed seed): the same code writes byte-identical files. The person lives
in Europe/Berlin; the data spans 33 days ending on the demo's "now" and crosses the
2026-10-25 DST change, so offsets switch from +0200 to +0100 as in a real export.
iPhone and Watch both count steps for the same walks, as they do in real exports.
"""

from __future__ import annotations

import random
import sys
import zipfile
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, TypedDict, Unpack
from xml.sax.saxutils import quoteattr
from zoneinfo import ZoneInfo

TZ = ZoneInfo("Europe/Berlin")
DEMO_NOW = datetime(2026, 11, 19, 8, 40, tzinfo=TZ)  # a Thursday morning
FIRST_DAY = date(2026, 10, 18)
SEED = 20261119
WATCH, PHONE = "Sam’s Apple Watch", "Sam’s iPhone"
DEVICE = {
    WATCH: "&lt;&lt;HKDevice: 0x283b14d70&gt;, name:Apple Watch, manufacturer:Apple Inc., "
    "model:Watch, hardware:Watch6,2, software:10.1&gt;",
    PHONE: "&lt;&lt;HKDevice: 0x283b14e10&gt;, name:iPhone, manufacturer:Apple Inc., "
    "model:iPhone, hardware:iPhone14,2, software:17.1&gt;",
}
Q, C = "HKQuantityTypeIdentifier", "HKCategoryTypeIdentifier"
HEADER = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 14 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ATTLIST VisionPrescription
  type CDATA #REQUIRED
  dateIssued CDATA #REQUIRED
  expirationDate CDATA #IMPLIED
  brand CDATA #IMPLIED
]>
<HealthData locale="de_DE">
 <ExportDate value="{export}"/>
 <Me HKCharacteristicTypeIdentifierDateOfBirth="1988-04-02" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexNotSet" HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>
"""


def _fmt(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S %z")


def _record(
    kind: str, source: str, start: datetime, end: datetime, value: str, *, unit: str | None = None
) -> str:
    unit_attr = f' unit="{unit}"' if unit else ""
    return (
        f' <Record type="{kind}" sourceName={quoteattr(source)} sourceVersion="10.1" '
        f'device="{DEVICE[source]}"{unit_attr} creationDate="{_fmt(end)}" '
        f'startDate="{_fmt(start)}" endDate="{_fmt(end)}" value="{value}"/>\n'
    )


def _local(day: date, hour: float) -> datetime:
    return datetime.combine(day, time(0), tzinfo=TZ) + timedelta(hours=hour)


def health_xml(rng: random.Random) -> str:
    out = [HEADER.format(export=_fmt(DEMO_NOW))]
    day = FIRST_DAY
    while day <= DEMO_NOW.date():
        stress = 1.0 if day.weekday() in (1, 2) else 0.0  # hard Tue/Wed
        # One day's records, in the order the seeded draws were always made: the bytes
        # of the bundled export depend on it.
        wake = _night(out, rng, day, stress)
        _heart(out, rng, day, wake, stress)
        _steps(out, rng, day)
        _sessions(out, rng, day)
        day += timedelta(days=1)
    out.append("</HealthData>\n")
    return "".join(out)


def _night(out: list[str], rng: random.Random, day: date, stress: float) -> datetime:
    """The night ending on `day`'s morning: in bed, then sleep stages; its wake time."""
    # Bedtime the evening before.
    bed = _local(day - timedelta(days=1), 23 + rng.uniform(-0.7, 0.8) + 0.5 * stress)
    wake = _local(day, 6.6 + rng.uniform(-0.4, 0.6) + (1.0 if day.weekday() >= 5 else 0))
    if day == date(2026, 11, 19):
        wake = _local(day, 6.1)  # a short night before the demo morning
    out.append(_record(C + "SleepAnalysis", PHONE, bed, wake, "HKCategoryValueSleepAnalysisInBed"))
    t = bed + timedelta(minutes=12)
    cycle = 0
    while t < wake - timedelta(minutes=10):
        for stage, minutes in (
            ("Core", 35),
            ("Deep", 25 - 6 * cycle),
            ("Core", 20),
            ("REM", 12 + 6 * cycle),
            ("Awake", 2),
        ):
            minutes = max(4, minutes + rng.randint(-5, 5))
            end = min(t + timedelta(minutes=minutes), wake)
            if end <= t:
                break
            out.append(
                _record(
                    C + "SleepAnalysis",
                    WATCH,
                    t,
                    end,
                    f"HKCategoryValueSleepAnalysisAsleep{stage}"
                    if stage != "Awake"
                    else "HKCategoryValueSleepAnalysisAwake",
                )
            )
            t = end
        cycle = min(cycle + 1, 3)
    return wake


def _heart(out: list[str], rng: random.Random, day: date, wake: datetime, stress: float) -> None:
    """HRV, the resting heart rate and the heart rate of one day."""
    # HRV (SDNN) a few times overnight and in the day; lower after stressful days.
    for hour in (2.0, 4.5, 10.0, 15.0, 20.0):
        when = _local(day, hour)
        if when > DEMO_NOW:
            continue
        sdnn = rng.gauss(48 - 9 * stress, 6)
        out.append(
            _record(
                Q + "HeartRateVariabilitySDNN",
                WATCH,
                when,
                when + timedelta(minutes=1),
                f"{max(12, sdnn):.4f}",
                unit="ms",
            )
        )
    if wake <= DEMO_NOW:
        rhr = rng.gauss(57 + 4 * stress, 1.5)
        if day == date(2026, 11, 19):
            rhr = 64
        out.append(
            _record(
                Q + "RestingHeartRate",
                WATCH,
                _local(day, 0.0),
                _local(day, 23.99),
                f"{rhr:.0f}",
                unit="count/min",
            )
        )
    # Heart rate every 20 minutes while awake.
    minute = 0
    while minute < 24 * 60:
        when = _local(day, minute / 60)
        if when > DEMO_NOW:
            break
        asleep = when < wake or when > _local(day, 23)
        bpm = rng.gauss(55 if asleep else 72 + 6 * stress, 4)
        out.append(_record(Q + "HeartRate", WATCH, when, when, f"{bpm:.0f}", unit="count/min"))
        minute += 20


def _steps(out: list[str], rng: random.Random, day: date) -> None:
    """Hourly chunks, counted by both Watch and iPhone for the same walks."""
    for hour in range(7, 23):
        start = _local(day, hour)
        end = start + timedelta(minutes=rng.randint(8, 40))
        if end > DEMO_NOW:
            break
        steps = max(0, int(rng.gauss(650, 350)))
        out.append(_record(Q + "StepCount", WATCH, start, end, str(steps), unit="count"))
        if rng.random() < 0.7:  # phone left on the desk sometimes
            out.append(
                _record(
                    Q + "StepCount",
                    PHONE,
                    start,
                    end,
                    str(int(steps * rng.uniform(0.85, 1.0))),
                    unit="count",
                )
            )


def _sessions(out: list[str], rng: random.Random, day: date) -> None:
    """The Tue/Thu gym workout and the Sunday mindful minutes."""
    if day.weekday() in (1, 3) and _local(day, 8) < DEMO_NOW:  # Tue/Thu gym
        start = _local(day, 7.0)
        end = start + timedelta(minutes=50)
        out.append(
            f' <Workout workoutActivityType="HKWorkoutActivityTypeFunctionalStrengthTraining" '
            f'duration="50" durationUnit="min" sourceName={quoteattr(WATCH)} sourceVersion="10.1" '
            f'device="{DEVICE[WATCH]}" creationDate="{_fmt(end)}" startDate="{_fmt(start)}" '
            f'endDate="{_fmt(end)}">\n'
            f'  <WorkoutStatistics type="{Q}ActiveEnergyBurned" startDate="{_fmt(start)}" '
            f'endDate="{_fmt(end)}" sum="{rng.uniform(280, 360):.1f}" unit="kcal"/>\n'
            f" </Workout>\n"
        )
    if day.weekday() == 6 and _local(day, 21) < DEMO_NOW:
        start = _local(day, 20.5)
        out.append(
            _record(
                C + "MindfulSession",
                PHONE,
                start,
                start + timedelta(minutes=10),
                "HKCategoryValueNotApplicable",
            )
        )


class _EventExtra(TypedDict, total=False):
    """What a demo event may have besides its uid, title, start and length."""

    rrule: dict[str, Any]
    attendees: int
    exdates: list[datetime]
    all_day: bool
    transparent: bool
    recurrence_id: datetime


def calendar_ics() -> bytes:
    import icalendar

    cal = icalendar.Calendar()
    cal.add("prodid", "-//rhythm-bridge//demo//EN")
    cal.add("version", "2.0")
    stamp = datetime(2026, 10, 1, 12, 0, tzinfo=ZoneInfo("UTC"))

    def event(
        uid: str, title: str, start: datetime, minutes: int, **extra: Unpack[_EventExtra]
    ) -> None:
        rrule, exdates = extra.get("rrule"), extra.get("exdates", ())
        attendees, all_day = extra.get("attendees", 0), extra.get("all_day", False)
        recurrence_id = extra.get("recurrence_id")
        transparent = extra.get("transparent", False)
        ev = icalendar.Event()
        ev.add("uid", uid)
        ev.add("summary", title)
        ev.add("dtstamp", stamp)
        if all_day:
            ev.add("dtstart", start.date())
            ev.add("dtend", start.date() + timedelta(days=1))
        else:
            ev.add("dtstart", start)
            ev.add("dtend", start + timedelta(minutes=minutes))
        if rrule:
            ev.add("rrule", rrule)
        for ex in exdates:
            ev.add("exdate", ex)
        if recurrence_id is not None:
            ev.add("recurrence-id", recurrence_id)
        for i in range(attendees):
            ev.add("attendee", f"mailto:person{i}@example.org")
        if transparent:
            ev.add("transp", "TRANSPARENT")
        cal.add_component(ev)

    monday = datetime(2026, 10, 19, tzinfo=TZ)

    def at(days: int, hour: float) -> datetime:
        return (monday + timedelta(days=days, hours=hour)).replace(tzinfo=TZ)

    weekdays = {"freq": "weekly", "byday": ["MO", "TU", "WE", "TH", "FR"]}
    event(
        "standup@demo",
        "Team standup",
        at(0, 9.5),
        15,
        rrule=weekdays,
        attendees=6,
        exdates=[at(17, 9.5)],
    )
    event("gym@demo", "Gym - 7am", at(1, 7), 50, rrule={"freq": "weekly", "byday": ["TU", "TH"]})
    event(
        "planning@demo",
        "Q3 planning doc",
        at(0, 10),
        120,
        rrule={"freq": "weekly", "byday": ["MO", "WE", "TH"]},
    )
    event("oneonone@demo", "1:1 with Sarah", at(2, 14), 30, rrule={"freq": "weekly"}, attendees=2)
    # This week's 1:1 moved from Wednesday to Thursday afternoon.
    event("oneonone@demo", "1:1 with Sarah", at(31, 15), 30, attendees=2, recurrence_id=at(30, 14))
    event(
        "review@demo",
        "Sprint review",
        at(1, 13),
        60,
        rrule={"freq": "weekly", "byday": ["TU"]},
        attendees=9,
    )
    event(
        "meetings@demo",
        "Customer call",
        at(2, 11),
        60,
        rrule={"freq": "weekly", "byday": ["WE"]},
        attendees=4,
    )
    event(
        "sync@demo",
        "Budget sync",
        at(2, 15),
        60,
        rrule={"freq": "weekly", "byday": ["WE"]},
        attendees=5,
    )
    event(
        "course@demo",
        "Learn Python course",
        at(0, 19),
        60,
        rrule={"freq": "weekly", "byday": ["MO", "TH"]},
    )
    event("dinner@demo", "Dinner with family", at(6, 18.5), 90, rrule={"freq": "weekly"})
    event("date@demo", "Date night", at(4, 19.5), 150, rrule={"freq": "weekly"})
    event("social@demo", "Team social event", at(11, 18), 120, attendees=12)
    event("journal@demo", "Journaling", at(0, 21.5), 20, rrule={"freq": "daily"}, transparent=True)
    event("nomeet@demo", "No meeting block", at(4, 13), 180, rrule={"freq": "weekly"})
    event("holiday@demo", "Reformation Day (holiday)", at(12, 0), 0, all_day=True, transparent=True)
    event("expenses@demo", "Expense report", at(31, 16), 30)
    cal.add_missing_timezones()
    return cal.to_ical()


def tasks_ics() -> bytes:
    """A Nextcloud-Tasks-style to-do list: weekday chores with due dates, most ticked off
    (some late), two left overdue, one reopened, and the coming week's still open."""
    import icalendar

    rng = random.Random(SEED + 24)
    cal = icalendar.Calendar()
    cal.add("prodid", "-//rhythm-bridge//demo tasks//EN")
    cal.add("version", "2.0")
    utc = ZoneInfo("UTC")
    stamp = DEMO_NOW.astimezone(utc)
    chores = [
        "Review pull requests",
        "Answer support tickets",
        "Write weekly update",
        "Prepare slides for planning",
        "Update project roadmap",
        "Pay invoices",
        "Gym",
        "Call the dentist",
        "Read chapter of Python book",
        "Tidy up inbox",
    ]
    day = FIRST_DAY + timedelta(days=5)
    n = 0
    while day <= DEMO_NOW.date() + timedelta(days=6):
        if day.weekday() < 5:
            for _ in range(rng.choice((1, 2, 2, 3))):
                n += 1
                title = chores[rng.randrange(len(chores))]
                todo = icalendar.Todo()
                todo.add("uid", f"task-{n}@demo")
                todo.add("summary", title)
                todo.add("dtstamp", stamp)
                created = datetime.combine(day - timedelta(days=rng.randint(1, 4)), time(9), TZ)
                todo.add("created", created.astimezone(utc))
                todo.add("due", day)
                finished = datetime.combine(day, time(10), TZ) + timedelta(
                    hours=rng.uniform(-20, 30)
                )
                if finished < DEMO_NOW - timedelta(hours=2) and rng.random() < 0.88:
                    todo.add("status", "COMPLETED")
                    todo.add("completed", finished.astimezone(utc))
                    todo.add("percent-complete", 100)
                else:
                    todo.add("status", "NEEDS-ACTION")
                todo.add("priority", rng.choice((0, 1, 5, 9)))
                cal.add_component(todo)
        day += timedelta(days=1)
    return cal.to_ical()


def write(out_dir: Path) -> tuple[Path, Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    export = out_dir / "apple_health_export.zip"
    info = zipfile.ZipInfo("apple_health_export/export.xml", date_time=(2026, 11, 19, 8, 40, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(export, "w") as zf:
        zf.writestr(info, health_xml(rng).encode("utf-8"))
    calendar = out_dir / "calendar.ics"
    calendar.write_bytes(calendar_ics())
    tasks = out_dir / "tasks.ics"
    tasks.write_bytes(tasks_ics())
    return export, calendar, tasks


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    for path in write(target):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
