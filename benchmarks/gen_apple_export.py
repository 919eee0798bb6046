"""A deterministic, Apple-Health-shaped export (export.zip or export.xml) plus its truth.

    python benchmarks/gen_apple_export.py OUT.zip [--days N | --mb SIZE] [--broken-dtd]
        [--control-chars] [--locale de_DE] [--seed 1]

What a real iOS 17 export holds, in the same order: an XML declaration and an internal
DTD subset (iOS 16's malformed one with --broken-dtd), `<HealthData>`, `ExportDate`, `Me`,
then Records grouped by type, Correlations (blood pressure: their child Records also
appear at top level), Workouts with `WorkoutStatistics` children, and ActivitySummary.
Heart rate and iPhone + Watch steps overlap like the real thing; HRV records carry a
`HeartRateVariabilityMetadataList` of locale-formatted beat times; every device attribute
is the escaped `<<HKDevice: ...>>` string.

The truth file (OUT minus suffix + `.truth.json`) is computed from exactly the values
written: records per metric key as `connectors.apple_health` should yield them, steps per
local day per source, sleep minutes per stage by wake-up day, mindful minutes and workouts
per day. The same arguments always give byte-identical output.
"""

from __future__ import annotations

import argparse
import json
import random
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import IO, Any

DAY = 86_400
Q, C = "HKQuantityTypeIdentifier", "HKCategoryTypeIdentifier"
WATCH, PHONE = "Robin’s Apple Watch", "Robin’s iPhone"
DEVICES = {
    WATCH: "name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch7,3, "
    "software:10.2",
    PHONE: "name:iPhone, manufacturer:Apple Inc., model:iPhone, hardware:iPhone15,3, software:17.2",
}
BYTES_PER_DAY = 650_000  # measured with the defaults; --mb converts with it
STAGES = (("AsleepCore", "core"), ("AsleepDeep", "deep"), ("AsleepREM", "rem"))
# Apple writes beat times in the phone's locale: 12 h with AM/PM, 24 h, comma decimals.
BEAT_TIME: dict[str, Callable[[int, int, int, int], str]] = {
    "en_US": lambda h, m, s, cs: (
        f"{h % 12 or 12}:{m:02d}:{s:02d}.{cs:02d} {'AM' if h < 12 else 'PM'}"
    ),
    "en_GB": lambda h, m, s, cs: f"{h:02d}:{m:02d}:{s:02d}.{cs:02d}",
    "de_DE": lambda h, m, s, cs: f"{h:02d}:{m:02d}:{s:02d},{cs:02d}",
}


def dtd(broken: bool) -> str:
    """The internal subset; iOS 16 left the VisionPrescription ATTLIST without its `>`."""
    close = "" if broken else ">\n"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE HealthData [\n'
        f"<!-- HealthKit Export Version: {12 if broken else 14} -->\n"
        "<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>\n"
        "<!ATTLIST HealthData\n  locale CDATA #REQUIRED\n>\n"
        "<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>\n"
        "<!ATTLIST Record\n  type CDATA #REQUIRED\n  unit CDATA #IMPLIED\n"
        "  value CDATA #IMPLIED\n  sourceName CDATA #REQUIRED\n  device CDATA #IMPLIED\n"
        "  startDate CDATA #REQUIRED\n  endDate CDATA #REQUIRED\n>\n"
        "<!-- Note: Any Records that appear as children of a correlation also appear as "
        "top-level records in this document. -->\n"
        "<!ELEMENT Correlation ((MetadataEntry|Record)*)>\n"
        "<!ATTLIST VisionPrescription\n  type CDATA #REQUIRED\n  dateIssued CDATA #REQUIRED\n"
        f"{close}]>\n"
    )


class Export:
    """Writes one export day by day and keeps the truth of what it wrote."""

    def __init__(self, args: argparse.Namespace, out: IO[bytes]) -> None:
        self.a = args
        self.out = out
        self.first = date.fromisoformat(args.start)
        self.offset = args.tz
        self.counts: Counter[str] = Counter()
        self.days: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"steps": Counter(), "sleep_min": Counter(), "mindful_min": 0.0, "workouts": 0}
        )
        self.nrec = 0
        self.xml_records = 0
        self.control = 0
        self.buf: list[str] = []
        self.size = 0
        self.workouts: list[str] = []
        self.correlations: list[str] = []

    def when(self, t: float) -> str:
        d, rest = divmod(int(t), DAY)
        h, rest = divmod(rest, 3600)
        return f"{self.first + timedelta(d)} {h:02d}:{rest // 60:02d}:{rest % 60:02d} {self.offset}"

    def day_key(self, t: float) -> str:
        return (self.first + timedelta(int(t) // DAY)).isoformat()

    def emit(self, text: str) -> None:
        self.buf.append(text)
        if len(self.buf) >= 2048:
            self.flush()

    def flush(self) -> None:
        data = "".join(self.buf).encode()
        self.buf.clear()
        self.size += len(data)
        self.out.write(data)

    def device(self, source: str) -> str:
        self.nrec += 1
        name = DEVICES[source]
        if self.a.control_chars and self.nrec % 997 == 0:
            name = name.replace("name:", "name:\x0b", 1)  # as iOS 16 exports carry
            self.control += 1
        return f"&lt;&lt;HKDevice: 0x{0x280000000 + self.nrec % 4096 * 16:x}&gt;, {name}&gt;"

    def record(
        self,
        kind: str,
        metric: str | None,
        source: str,
        start: float,
        end: float,
        *,
        value: str,
        unit: str = "",
        children: str = "",
    ) -> str:
        if metric:
            self.counts[metric] += 1
        self.xml_records += 1
        u = f' unit="{unit}"' if unit else ""
        text = (
            f' <Record type="{kind}" sourceName="{source}" sourceVersion="17.2" '
            f'device="{self.device(source)}"{u} creationDate="{self.when(end + 5)}" '
            f'startDate="{self.when(start)}" endDate="{self.when(end)}" value="{value}"'
        )
        return text + (f">\n{children} </Record>\n" if children else "/>\n")

    # One type at a time, day by day, like Apple (records are grouped by type).
    def steps(self, d: int, r: random.Random) -> None:
        bouts: list[tuple[int, int]] = []
        for _ in range(r.randint(10, 20)):
            start = d * DAY + r.randint(7 * 3600, 21 * 3600)
            length = r.randint(120, 1200)
            cadence = r.randint(80, 120)
            # A device never counts the same seconds twice: walks do not overlap.
            if any(start < e + 60 and start + length + 60 > s for s, e in bouts):
                continue
            bouts.append((start, start + length))
            for source, seg in ((WATCH, 120), (PHONE, 300)):
                if source == PHONE and r.random() < 0.3:
                    continue  # the phone stayed on the desk
                t = start + (r.randint(-20, 20) if source == PHONE else 0)
                while t < start + length:
                    n = min(seg, start + length - t)
                    v = max(1, round(cadence * n / 60 * r.uniform(0.9, 1.1)))
                    self.emit(
                        self.record(
                            Q + "StepCount", "steps", source, t, t + n, value=str(v), unit="count"
                        )
                    )
                    self.days[self.day_key(t)]["steps"][source] += v
                    t += n

    def heart_rate(self, d: int, r: random.Random) -> None:
        t = d * DAY + r.randint(0, 240)
        while t < (d + 1) * DAY:
            meta = '  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="1"/>\n'
            v = str(r.randint(52, 110))
            self.emit(
                self.record(
                    Q + "HeartRate",
                    "heart_rate",
                    WATCH,
                    t,
                    t,
                    value=v,
                    unit="count/min",
                    children=meta,
                )
            )
            t += r.randint(120, 360)

    def energy(self, d: int, r: random.Random) -> None:
        t = d * DAY + 7 * 3600
        while t < d * DAY + 23 * 3600:
            n = r.randint(40, 120)
            kcal = f"{r.uniform(0.05, 6):.3f}"
            self.emit(
                self.record(
                    Q + "ActiveEnergyBurned",
                    "active_energy",
                    WATCH,
                    t,
                    t + n,
                    value=kcal,
                    unit="kcal",
                )
            )
            t += n
        t = d * DAY
        while t < (d + 1) * DAY:  # a type the meters do not use: read past, never kept
            n = min(r.randint(240, 360), (d + 1) * DAY - t)
            kcal = f"{r.uniform(4, 6):.3f}"
            self.emit(
                self.record(Q + "BasalEnergyBurned", None, WATCH, t, t + n, value=kcal, unit="kcal")
            )
            t += n

    def resting(self, d: int, r: random.Random) -> None:
        start = d * DAY + r.randint(0, 600)
        v = str(r.randint(52, 62))
        self.emit(
            self.record(
                Q + "RestingHeartRate",
                "resting_hr",
                WATCH,
                start,
                start + 80_000,
                value=v,
                unit="count/min",
            )
        )

    def hrv(self, d: int, r: random.Random) -> None:
        fmt = BEAT_TIME.get(self.a.locale, BEAT_TIME["en_US"])
        starts: list[int] = []
        for _ in range(r.randint(3, 6)):
            start = d * DAY + r.randint(1 * 3600, 22 * 3600)
            if any(abs(start - s) < 300 for s in starts):
                continue  # the Watch takes one reading at a time
            starts.append(start)
            t, beats = start + r.random(), []
            for _ in range(r.randint(50, 70)):
                t += 60 / r.randint(54, 70)
                cs = int(t * 100) % (DAY * 100)
                sec, cs = divmod(cs, 100)
                text = fmt(sec // 3600, sec // 60 % 60, sec % 60, cs)
                beats.append(
                    f'   <InstantaneousBeatsPerMinute bpm="{r.randint(54, 70)}" time="{text}"/>\n'
                )
            children = (
                "  <HeartRateVariabilityMetadataList>\n"
                + "".join(beats)
                + "  </HeartRateVariabilityMetadataList>\n"
            )
            self.counts["hrv_rmssd"] += 1  # the reader derives RMSSD from the beat times
            v = f"{r.lognormvariate(3.8, 0.3):.4f}"
            self.emit(
                self.record(
                    Q + "HeartRateVariabilitySDNN",
                    "hrv_sdnn",
                    WATCH,
                    start,
                    int(t) + 1,
                    value=v,
                    unit="ms",
                    children=children,
                )
            )

    def respiratory(self, d: int, r: random.Random) -> None:
        t = d * DAY + r.randint(0, 900)
        while t < d * DAY + 6 * 3600:
            v = f"{r.uniform(12, 17):.1f}"
            self.emit(
                self.record(
                    Q + "RespiratoryRate",
                    "respiratory_rate",
                    WATCH,
                    t,
                    t,
                    value=v,
                    unit="count/min",
                )
            )
            t += r.randint(600, 1200)

    def sleep(self, d: int, r: random.Random) -> None:
        bed = d * DAY + r.randint(22 * 3600, 24 * 3600)
        wake = (d + 1) * DAY + r.randint(6 * 3600, 8 * 3600)
        night = self.days[self.day_key(wake)]["sleep_min"]
        value = C + "SleepAnalysis"
        self.emit(
            self.record(
                value, "sleep", PHONE, bed, wake + 300, value="HKCategoryValueSleepAnalysisInBed"
            )
        )
        night["in_bed"] += (wake + 300 - bed) / 60
        t = bed + r.randint(300, 1200)
        while t < wake:
            stage, label = r.choice(STAGES)
            if r.random() < 0.1:
                stage, label = "Awake", "awake"
            end = min(wake, t + r.randint(300, 2400))
            rec = self.record(
                value, "sleep", WATCH, t, end, value=f"HKCategoryValueSleepAnalysis{stage}"
            )
            self.emit(rec)
            night[label] += (end - t) / 60
            t = end

    def mindful(self, d: int, r: random.Random) -> None:
        sessions: list[int] = []
        for _ in range(r.choice((0, 0, 1, 1, 2))):
            start = d * DAY + r.randint(8 * 3600, 21 * 3600)
            length = r.randint(60, 900)
            if any(abs(start - s) < 1800 for s in sessions):
                continue
            sessions.append(start)
            kind = C + "MindfulSession"
            self.emit(
                self.record(
                    kind,
                    "mindful",
                    WATCH,
                    start,
                    start + length,
                    value="HKCategoryValueNotApplicable",
                )
            )
            self.days[self.day_key(start)]["mindful_min"] += length / 60

    def blood_pressure(self, d: int, r: random.Random) -> None:
        if d % 7:
            return
        t = d * DAY + 8 * 3600
        sys_, dia = r.randint(110, 130), r.randint(70, 85)
        kids = [
            self.record(
                Q + "BloodPressureSystolic", None, PHONE, t, t, value=str(sys_), unit="mmHg"
            ),
            self.record(
                Q + "BloodPressureDiastolic", None, PHONE, t, t, value=str(dia), unit="mmHg"
            ),
            # a heart rate the cuff measured: top level and inside the Correlation, count once
            self.record(Q + "HeartRate", "heart_rate", PHONE, t, t, value="64", unit="count/min"),
        ]
        for k in kids:
            self.emit(k)
        inner = "".join(" " + k for k in kids)
        self.correlations.append(
            f' <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="{PHONE}" '
            f'startDate="{self.when(t)}" endDate="{self.when(t)}">\n{inner} </Correlation>\n'
        )

    def workout(self, d: int, r: random.Random) -> None:
        if r.random() < 0.4:
            return
        kind = r.choice(("Running", "Cycling", "Yoga", "TraditionalStrengthTraining"))
        start = d * DAY + r.randint(16 * 3600, 19 * 3600)
        end = start + r.randint(20 * 60, 75 * 60)
        s, e = self.when(start), self.when(end)
        kcal = (end - start) / 60 * r.uniform(5, 11)
        stats = (
            f'  <WorkoutStatistics type="{Q}ActiveEnergyBurned" startDate="{s}" endDate="{e}" '
            f'sum="{kcal:.3f}" unit="kcal"/>\n'
        )
        if kind in ("Running", "Cycling"):
            km = (end - start) / 3600 * (10 if kind == "Running" else 24)
            stats += (
                f'  <WorkoutStatistics type="{Q}Distance{"WalkingRunning" if kind == "Running" else "Cycling"}" '
                f'startDate="{s}" endDate="{e}" sum="{km:.3f}" unit="km"/>\n'
            )
        self.counts["workout"] += 1
        self.counts["workout_energy"] += 1
        self.counts["workout_distance"] += kind in ("Running", "Cycling")
        self.days[self.day_key(start)]["workouts"] += 1
        self.workouts.append(
            f' <Workout workoutActivityType="HKWorkoutActivityType{kind}" duration="{(end - start) / 60:.4f}" '
            f'durationUnit="min" sourceName="{WATCH}" sourceVersion="10.2" device="{self.device(WATCH)}" '
            f'creationDate="{e}" startDate="{s}" endDate="{e}">\n'
            '  <MetadataEntry key="HKIndoorWorkout" value="0"/>\n'
            f'  <WorkoutEvent type="HKWorkoutEventTypeSegment" date="{s}" duration="5" durationUnit="min"/>\n'
            f"{stats} </Workout>\n"
        )

    def write(self) -> None:
        a = self.a
        self.emit(dtd(a.broken_dtd))
        self.emit(
            f'<HealthData locale="{a.locale}">\n <ExportDate value="{self.when(a.days * DAY + 9 * 3600)}"/>\n'
            ' <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-03-02" '
            'HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexNotSet" '
            'HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" '
            'HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" '
            'HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>\n'
        )
        kinds = (
            self.steps, self.heart_rate, self.energy, self.resting, self.hrv,
            self.respiratory, self.sleep, self.mindful, self.blood_pressure, self.workout,
        )  # fmt: skip
        for fn in kinds:
            for d in range(a.days):
                fn(d, random.Random(f"{a.seed}/{fn.__name__}/{d}"))
        for text in (*self.correlations, *self.workouts):
            self.emit(text)
        for d in range(a.days):
            self.emit(
                f' <ActivitySummary dateComponents="{self.first + timedelta(d)}" '
                'activeEnergyBurned="512.3" activeEnergyBurnedGoal="500" '
                'activeEnergyBurnedUnit="kcal" appleExerciseTime="31" appleStandHours="11"/>\n'
            )
        self.emit("</HealthData>\n")
        self.flush()

    def truth(self, path: Path) -> dict[str, Any]:
        days = {
            k: {
                "steps": dict(sorted(v["steps"].items())),
                "sleep_min": {s: round(m, 4) for s, m in sorted(v["sleep_min"].items())},
                "mindful_min": round(v["mindful_min"], 4),
                "workouts": v["workouts"],
            }
            for k, v in sorted(self.days.items())
        }
        return {
            "generator": "benchmarks/gen_apple_export.py",
            "args": vars(self.a),
            "file": path.name,
            "xml_bytes": self.size,
            "xml_records": self.xml_records,  # top-level <Record> elements, every type
            "records_total": sum(self.counts.values()),
            "records_by_metric": dict(sorted(self.counts.items())),
            "control_char_records": self.control,
            "days": days,
        }


def generate(out: Path, **options: Any) -> dict[str, Any]:
    """Write the export and its truth file; return the truth."""
    defaults = {
        "days": 30,
        "seed": 1,
        "start": "2026-01-05",
        "tz": "+0100",
        "locale": "en_US",
        "broken_dtd": False,
        "control_chars": False,
    }
    args = argparse.Namespace(**{**defaults, **options})
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".zip":
        info = zipfile.ZipInfo("apple_health_export/export.xml", date_time=(2026, 1, 1, 9, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with zipfile.ZipFile(out, "w") as zf, zf.open(info, "w", force_zip64=True) as fh:
            export = Export(args, fh)
            export.write()
    else:
        with out.open("wb") as fh:
            export = Export(args, fh)
            export.write()
    truth = export.truth(out)
    out.with_suffix(".truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False))
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="export.zip or export.xml")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--days", type=int, default=30)
    size.add_argument("--mb", type=float, help="approximate XML size in MB (sets --days)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--locale", default="en_US", choices=sorted(BEAT_TIME))
    ap.add_argument("--broken-dtd", action="store_true")
    ap.add_argument("--control-chars", action="store_true")
    a = ap.parse_args()
    days = max(2, round(a.mb * 1e6 / BYTES_PER_DAY)) if a.mb else a.days
    truth = generate(
        a.out,
        days=days,
        seed=a.seed,
        locale=a.locale,
        broken_dtd=a.broken_dtd,
        control_chars=a.control_chars,
    )
    print(f"wrote {a.out}: {truth['xml_bytes'] / 1e6:.1f} MB XML, {truth['records_total']} records")


if __name__ == "__main__":
    main()
