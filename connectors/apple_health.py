"""Apple Health "Export All Health Data" (export.zip or export.xml), streamed.

The XML is read straight out of the zip with pyexpat in 1 MiB chunks, so memory stays
flat whatever the export's size. Before the parser sees a byte, the internal DTD subset
is dropped (iOS 16 wrote a malformed one: `<!ATTLIST VisionPrescription` without `>`)
and XML-illegal control characters (a stray `\\x0b`) are removed.

The stripping is a convenience, not the defence: a crafted file can hide a DOCTYPE where
the stripper does not look (after a long comment, after a comment naming the root). The
parser itself refuses every entity declaration, parsed or unparsed, internal or external,
wherever it appears, before anything could be expanded (as defusedxml does with the same
expat handlers); parameter entities are never parsed. A real export declares none.
"""

from __future__ import annotations

import itertools
import re
import zipfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from xml.parsers import expat

from bridge.errors import InputError, printable
from connectors.archive import check_member, open_zip
from connectors.base import ReadContext, ReadingRecord, Skipped
from connectors.hrv import rmssd_ms

KIND = "apple-health"
SOURCE = "apple_health"

Q, C = "HKQuantityTypeIdentifier", "HKCategoryTypeIdentifier"
# Apple type -> our metric key. Only what the meters use is kept.
QUANTITY_TYPES: dict[str, str] = {
    Q + "StepCount": "steps",
    Q + "HeartRateVariabilitySDNN": "hrv_sdnn",
    Q + "RestingHeartRate": "resting_hr",
    Q + "HeartRate": "heart_rate",
    Q + "RespiratoryRate": "respiratory_rate",
    Q + "ActiveEnergyBurned": "active_energy",
}
SLEEP_TYPE = C + "SleepAnalysis"
MINDFUL_TYPE = C + "MindfulSession"
# Every sleep value old and new exports use -> a stage label.
SLEEP_VALUES: dict[str, str] = {
    "HKCategoryValueSleepAnalysisInBed": "in_bed",
    "HKCategoryValueSleepAnalysisAsleep": "asleep",  # before iOS 16
    "HKCategoryValueSleepAnalysisAsleepUnspecified": "asleep",
    "HKCategoryValueSleepAnalysisAwake": "awake",
    "HKCategoryValueSleepAnalysisAsleepCore": "core",
    "HKCategoryValueSleepAnalysisAsleepDeep": "deep",
    "HKCategoryValueSleepAnalysisAsleepREM": "rem",
}
# Very old exports and some third-party apps write the enum's integer instead.
SLEEP_VALUES.update(
    {"0": "in_bed", "1": "asleep", "2": "awake", "3": "core", "4": "deep", "5": "rem"}
)

CHUNK = 1 << 20
PROLOG_LIMIT = 4 * CHUNK  # a real DTD is about 10 KB; <HealthData> follows it
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13))
_DEVICE_NAME = re.compile(r"name:([^,>]+)")
# A beat's time of day as the phone's locale wrote it: "6:14:48.94 PM", "20:14:07.68",
# "08:34:05,10", "午後6:14:48.94".
_BEAT_TIME = re.compile(r"(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?")
_PM = ("PM", "pm", "p.m.", "P.M.", "午後", "오후", "下午", "nachm.")
_AM = ("AM", "am", "a.m.", "A.M.", "午前", "오전", "上午", "vorm.")
_KM_PER = {"km": 1.0, "m": 0.001, "mi": 1.609344, "yd": 0.0009144, "ft": 0.0003048}


def _open(path: Path) -> tuple[IO[bytes], zipfile.ZipFile | None]:
    """The export.xml byte stream, from a zip member or a plain file."""
    try:
        is_zip = zipfile.is_zipfile(path)
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    if not is_zip:
        if path.suffix.lower() == ".zip":
            raise InputError(f"{path}: not a zip file (is the download complete?)")
        return path.open("rb"), None
    archive = open_zip(path, "Apple Health export")
    names = [i for i in archive.infolist() if i.filename.rsplit("/", 1)[-1] == "export.xml"]
    if not names:
        archive.close()
        raise InputError(f"{path}: no export.xml inside; is this an Apple Health export?")
    member = min(names, key=lambda i: len(i.filename))
    try:
        check_member(path, member)
        return archive.open(member), archive
    except (InputError, zipfile.BadZipFile, OSError) as err:
        archive.close()
        if isinstance(err, InputError):
            raise
        raise InputError(f"{path}: damaged zip file: {err}") from None


def _clean_chunks(stream: IO[bytes], path: Path) -> Iterator[bytes]:
    """Chunks of the XML with the DOCTYPE's internal subset and control bytes removed."""
    head = b""
    in_prolog = True
    while True:
        try:
            chunk = stream.read(CHUNK)
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise InputError(f"{path}: damaged or truncated export: {err}") from None
        if not chunk:
            if in_prolog and head:
                yield head.translate(None, _CONTROL)
            return
        if in_prolog:
            head += chunk
            start = head.find(b"<!DOCTYPE")
            root = head.find(b"<HealthData")
            if start == -1 and root == -1 and len(head) < PROLOG_LIMIT:
                continue
            subset = head.find(b"[", start) if start != -1 else -1
            if subset != -1 and head.find(b">", start) < subset:
                subset = -1  # a DOCTYPE without an internal subset is harmless
            if subset != -1 and (root == -1 or start < root):
                end = head.find(b"]>", subset)
                if end == -1:
                    if len(head) > PROLOG_LIMIT:
                        raise InputError(f"{path}: DOCTYPE never ends; not an Apple Health export")
                    continue
                head = head[:start] + head[end + 2 :]
            in_prolog = False
            chunk, head = head, b""
        yield chunk.translate(None, _CONTROL)


# (text, datetime) of the last date parsed; one tuple, so threads never see half of it.
_last_when: tuple[str, datetime | None] = ("", None)


def _when(text: str) -> datetime:
    # "2016-11-14 07:25:41 -0700": drop the space before the offset; fromisoformat is
    # many times faster than strptime, and exports hold millions of these. An instant's
    # end equals its start and a segment starts where the last one ended, so the last
    # answer is reused (the writer then reuses its conversion too, by identity).
    global _last_when
    last_text, last = _last_when
    if text == last_text and last is not None:
        return last
    when = datetime.fromisoformat(text[:19] + text[20:] if len(text) > 20 else text)
    _last_when = (text, when)
    return when


_device_cache: dict[str, str] = {}


def _device_name(device: str) -> str:
    """The device's name ("Apple Watch") out of "<<HKDevice: 0x…>, name:Apple Watch, …>"."""
    name = _device_cache.get(device)
    if name is None:
        match = _DEVICE_NAME.search(device)
        name = match.group(1).strip() if match else device[:300]
        if len(_device_cache) > 10_000:
            _device_cache.clear()
        _device_cache[device] = name
    return name


def _missing_or(err: Exception) -> str:
    return f"attribute {err}" if isinstance(err, KeyError) else str(err)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float(text.replace(",", "."))  # a decimal comma from some locales


def _beat_seconds(text: str) -> float | None:
    """Seconds since midnight of one InstantaneousBeatsPerMinute time, any locale."""
    match = _BEAT_TIME.search(text)
    if match is None:
        return None
    hour, minute, sec, frac = match.groups()
    h = int(hour)
    if h < 12 and any(p in text for p in _PM):
        h += 12
    elif h == 12 and any(a in text for a in _AM):
        h = 0
    return h * 3600 + int(minute) * 60 + int(sec) + (float("0." + frac) if frac else 0.0)


def beat_intervals(beat_times: list[float]) -> list[float]:
    """RR intervals (s) between successive beat times of day; the list may cross midnight."""
    return [b - a if b >= a else b + 86_400 - a for a, b in itertools.pairwise(beat_times)]


def _refuse_entities(parser: Any, path: Path) -> None:
    """Make entity declarations and external references fatal, wherever the DTD is."""

    def refuse(name: str | None, *_: object) -> None:
        raise InputError(
            f"{path}: declares the XML entity {printable(str(name))[:80]!r}; refused "
            "(an Apple Health export declares none: the file was crafted or altered)"
        )

    def external(context: str | None, base: str | None, system_id: str | None, *_: object) -> int:
        raise InputError(
            f"{path}: refers to an external XML entity; refused (nothing is read from "
            "outside the export)"
        )

    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = external


def read(path: Path, ctx: ReadContext) -> Iterator[Any]:
    """Yield the records the meters need, each once (Correlation children are skipped).

    With `ctx.fast_rows`, each top-level Record's attributes go to it first: what it
    returns instead of None is yielded as is (the writer's own row;
    bridge/intake/apple_rows.py), and None means the ordinary record.
    """
    stream, archive = _open(Path(path))
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    _refuse_entities(parser, Path(path))
    out: list[Any] = []
    state = _State(out, ctx.fast_rows)
    parser.StartElementHandler = state.start
    parser.EndElementHandler = state.end
    try:
        for chunk in _clean_chunks(stream, Path(path)):
            try:
                parser.Parse(chunk, False)
            except expat.ExpatError as err:
                if not state.seen_root:
                    raise InputError(
                        f"{path}: not an Apple Health export (malformed XML: {err})"
                    ) from None
                raise InputError(f"{path}: malformed XML ({err})") from None
            except (ValueError, KeyError) as err:
                raise InputError(
                    f"{path}: unreadable record near line {parser.CurrentLineNumber}: {err}"
                ) from None
            yield from out
            out.clear()
        not_health = f"{path}: no <HealthData> element; not an Apple Health export"
        try:
            parser.Parse(b"", True)
        except expat.ExpatError as err:
            if not state.seen_root:
                raise InputError(not_health) from None
            raise InputError(f"{path}: export ends early ({err}); download it again") from None
        yield from out
        if not state.seen_root:
            raise InputError(not_health)
    finally:
        stream.close()
        if archive is not None:
            archive.close()


class _State:
    """The parser's handlers and what they remember between elements."""

    __slots__ = (
        "activity",
        "beats",
        "correlation",
        "fast",
        "hrv",
        "out",
        "seen_root",
        "stats",
        "workout",
    )

    def __init__(self, out: list[Any], fast: Callable[[dict[str, str]], Any] | None) -> None:
        self.out = out
        self.fast = fast
        self.seen_root = False
        self.correlation = 0
        self.hrv: ReadingRecord | None = None  # the SDNN record whose beats are being read
        self.beats: list[float] = []
        self.workout: dict[str, str] | None = None
        self.stats: dict[str, float] = {}
        self.activity = False

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "Record":
            if not self.correlation:  # each record once: a Correlation repeats its children
                self._record(attrs)
        elif name == "InstantaneousBeatsPerMinute":
            if self.hrv is not None:
                t = _beat_seconds(attrs.get("time", ""))
                if t is not None:
                    self.beats.append(t)
        elif name == "Correlation":
            self.correlation += 1
        elif name == "Workout":
            self.workout = attrs
            self.stats = {}
        elif name == "WorkoutStatistics":
            if self.workout is not None:
                # iOS 16+ may also nest statistics per WorkoutActivity (one per leg of a
                # multisport workout); the workout's own totals win, the legs' sum is a
                # fallback, never both.
                _statistic(attrs, self.stats, "leg_" if self.activity else "")
        elif name == "WorkoutActivity":
            self.activity = True
        elif name == "HealthData":
            self.seen_root = True

    def _record(self, attrs: dict[str, str]) -> None:
        if self.fast is not None:
            row = self.fast(attrs)
            if row is not None:
                self.out.append(row)
                return
        try:
            rec = _record(attrs)
        except (ValueError, KeyError, OverflowError) as err:
            kind = attrs.get("type", "Record").removeprefix(Q).removeprefix(C)
            self.out.append(Skipped(kind, f"unreadable {_missing_or(err)}"))
            return
        if rec is not None:
            self.out.append(rec)
            if rec.metric == "hrv_sdnn":
                self.hrv = rec

    def end(self, name: str) -> None:
        if name == "Record":
            if self.hrv is not None:
                sdnn, self.hrv = self.hrv, None
                rmssd = rmssd_ms(beat_intervals(self.beats)) if self.beats else None
                self.beats.clear()
                if rmssd is not None:
                    self.out.append(
                        ReadingRecord(
                            "hrv_rmssd",
                            sdnn.start,
                            sdnn.end,
                            rmssd,
                            "ms",
                            "beats",
                            sdnn.origin,
                            sdnn.device,
                        )
                    )
        elif name == "Correlation":
            self.correlation -= 1
        elif name == "WorkoutActivity":
            self.activity = False
        elif name == "Workout" and self.workout is not None:
            try:
                self.out.extend(_workout(self.workout, self.stats))
            except (ValueError, KeyError, OverflowError) as err:
                self.out.append(Skipped("Workout", f"unreadable {_missing_or(err)}"))
            self.workout = None


def _kcal(value: float, unit: str) -> float:
    return value / 4.184 if unit == "kJ" else value  # "Cal" and "kcal" are the same


def _statistic(a: dict[str, str], stats: dict[str, float], prefix: str) -> None:
    """Total energy (kcal) and distance (km) of a workout from its WorkoutStatistics."""
    kind, total = a.get("type", ""), a.get("sum")
    if total is None:
        return
    if kind == Q + "ActiveEnergyBurned":
        key = prefix + "energy"
        stats[key] = stats.get(key, 0.0) + _kcal(_number(total), a.get("unit", ""))
    elif kind.startswith(Q + "Distance"):
        factor = _KM_PER.get(a.get("unit", "km"))
        if factor is not None:
            key = prefix + "distance"
            stats[key] = stats.get(key, 0.0) + _number(total) * factor


def _record(a: dict[str, str]) -> ReadingRecord | None:
    kind = a["type"]
    metric = QUANTITY_TYPES.get(kind)
    if metric is None and kind != SLEEP_TYPE and kind != MINDFUL_TYPE:
        return None
    first, last = a["startDate"], a["endDate"]
    start = _when(first)
    end = start if last == first else _when(last)  # instants: heart rate, respiration
    origin = a.get("sourceName", "")
    device = a.get("device")
    device = _device_name(device) if device else ""
    if metric is not None:
        value = _number(a["value"])
        unit = a.get("unit", "")
        if metric == "active_energy":
            value, unit = _kcal(value, unit), "kcal"
        return ReadingRecord(metric, start, end, value, unit, "", origin, device)
    minutes = (end - start).total_seconds() / 60
    if kind == MINDFUL_TYPE:
        return ReadingRecord("mindful", start, end, minutes, "min", "", origin, device)
    label = SLEEP_VALUES.get(a.get("value", ""))
    if label is None:
        return None
    return ReadingRecord("sleep", start, end, minutes, "min", label, origin, device)


def _workout(a: dict[str, str], stats: dict[str, float]) -> list[ReadingRecord]:
    """The workout (minutes, label = activity) plus its energy and distance, if known."""
    start, end = _when(a["startDate"]), _when(a["endDate"])
    activity = a.get("workoutActivityType", "").removeprefix("HKWorkoutActivityType")[:64]
    origin = a.get("sourceName", "")
    device = _device_name(a.get("device", "")) if a.get("device") else ""
    minutes = (end - start).total_seconds() / 60
    out = [ReadingRecord("workout", start, end, minutes, "min", activity, origin, device)]
    # Before iOS 16 the totals were attributes of the Workout itself.
    energy = stats.get("energy", stats.get("leg_energy"))
    if energy is None and a.get("totalEnergyBurned"):
        energy = _kcal(_number(a["totalEnergyBurned"]), a.get("totalEnergyBurnedUnit", "kcal"))
    distance = stats.get("distance", stats.get("leg_distance"))
    if distance is None and a.get("totalDistance"):
        factor = _KM_PER.get(a.get("totalDistanceUnit", "km"))
        distance = _number(a["totalDistance"]) * factor if factor else None
    if energy is not None:
        out.append(
            ReadingRecord(
                "workout_energy", start, end, round(energy, 3), "kcal", activity, origin, device
            )
        )
    if distance is not None:
        out.append(
            ReadingRecord(
                "workout_distance", start, end, round(distance, 4), "km", activity, origin, device
            )
        )
    return out
