"""Apple Health "Export All Health Data" (export.zip or export.xml), streamed.

The XML is read straight out of the zip with pyexpat in 1 MiB chunks, so memory stays
flat whatever the export's size. Before the parser sees a byte, the internal DTD subset
is dropped (iOS 16 wrote a malformed one: `<!ATTLIST VisionPrescription` without `>`)
and XML-illegal control characters (a stray `\\x0b`) are removed. With no DTD, no entity
can be declared, so entity expansion attacks have nothing to expand.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO
from xml.parsers import expat

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord

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
PROVIDES = frozenset({*QUANTITY_TYPES.values(), "sleep", "mindful", "workout"})

CHUNK = 1 << 20
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13))
_DEVICE_NAME = re.compile(r"name:([^,>]+)")


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
    try:
        archive = zipfile.ZipFile(path)
        names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "export.xml"]
    except (zipfile.BadZipFile, OSError) as err:
        raise InputError(f"{path}: damaged zip file: {err}") from None
    if not names:
        archive.close()
        raise InputError(f"{path}: no export.xml inside; is this an Apple Health export?")
    return archive.open(min(names, key=len)), archive


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
            if start == -1 and root == -1 and len(head) < 64 * CHUNK:
                continue
            if start != -1 and (root == -1 or start < root):
                end = head.find(b"]>", start)
                if end == -1:
                    if len(head) > 64 * CHUNK:
                        raise InputError(f"{path}: DOCTYPE never ends; not an Apple Health export")
                    continue
                head = head[:start] + head[end + 2 :]
            in_prolog = False
            chunk, head = head, b""
        yield chunk.translate(None, _CONTROL)


def _when(text: str) -> datetime:
    # "2016-11-14 07:25:41 -0700": drop the space before the offset; fromisoformat is
    # many times faster than strptime, and exports hold millions of these.
    return datetime.fromisoformat(text[:19] + text[20:] if len(text) > 20 else text)


def _device_name(device: str) -> str:
    match = _DEVICE_NAME.search(device)
    return match.group(1).strip() if match else device[:300]


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord]:
    """Yield the records the meters need, each once (Correlation children are skipped)."""
    stream, archive = _open(Path(path))
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    out: list[ReadingRecord] = []
    depth = {"correlation": 0}
    workout: dict[str, object] = {}
    seen_root = False

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal seen_root
        if name == "HealthData":
            seen_root = True
        elif name == "Correlation":
            depth["correlation"] += 1
        elif name == "Record" and not depth["correlation"]:
            rec = _record(attrs)
            if rec is not None:
                out.append(rec)
        elif name == "Workout":
            workout.clear()
            workout.update(attrs)

    def end(name: str) -> None:
        if name == "Correlation":
            depth["correlation"] -= 1
        elif name == "Workout" and workout:
            rec = _workout(workout)
            if rec is not None:
                out.append(rec)
            workout.clear()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        for chunk in _clean_chunks(stream, Path(path)):
            try:
                parser.Parse(chunk, False)
            except expat.ExpatError as err:
                if not seen_root:
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
            if not seen_root:
                raise InputError(not_health) from None
            raise InputError(f"{path}: export ends early ({err}); download it again") from None
        yield from out
        if not seen_root:
            raise InputError(not_health)
    finally:
        stream.close()
        if archive is not None:
            archive.close()


def _kcal(value: float, unit: str) -> float:
    return value / 4.184 if unit == "kJ" else value


def _record(a: dict[str, str]) -> ReadingRecord | None:
    kind = a.get("type", "")
    metric = QUANTITY_TYPES.get(kind)
    if metric is None and kind not in (SLEEP_TYPE, MINDFUL_TYPE):
        return None
    start, end = _when(a["startDate"]), _when(a["endDate"])
    origin = a.get("sourceName", "")
    device = _device_name(a.get("device", ""))
    if metric is not None:
        value = float(a["value"])
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


def _workout(a: dict[str, object]) -> ReadingRecord | None:
    start, end = _when(str(a["startDate"])), _when(str(a["endDate"]))
    activity = str(a.get("workoutActivityType", "")).removeprefix("HKWorkoutActivityType")
    minutes = (end - start).total_seconds() / 60
    return ReadingRecord(
        "workout",
        start,
        end,
        minutes,
        "min",
        activity[:64],
        str(a.get("sourceName", "")),
        _device_name(str(a.get("device", ""))),
    )
