"""FIT files (Garmin devices write them; so do Wahoo, Coros, Suunto), read with fitdecode.

What is kept:
    monitoring          steps between successive messages (the counters are cumulative per
                        activity type and reset each day; `timestamp_16` is resolved
                        against the last full timestamp), heart rate when present
    hrv                 beat-to-beat (RR) intervals -> RMSSD per 5-minute window
    hrv_value           Garmin's own 5-minute overnight RMSSD
    hrv_status_summary  last night's average RMSSD (label "night")
    sleep_level         sleep stages (light -> core), each lasting until the next level
    stress_level        stress 0-100 (negative values mean off-wrist or moving: dropped)
    respiration_rate    breaths/min (negative sentinels dropped)
    record              an activity's heart-rate samples (and the RR intervals' clock)
    session             the activity as a workout (minutes, label = sport), with its
                        energy (kcal) and distance (km) when the device wrote them

The file's CRC is checked: a damaged file is refused as a whole, never half-read.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import IO, Any

from bridge.errors import InputError
from connectors.base import ReadContext, ReadingRecord
from connectors.hrv import rmssd_ms

KIND = "fit"
SOURCE = "fit"

FIT_EPOCH = datetime(1989, 12, 31, tzinfo=UTC)
_DECODER_FAILURES = (
    AssertionError,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    OverflowError,
    ZeroDivisionError,
    struct.error,
)
HRV_WINDOW = timedelta(minutes=5)
STEP_ACTIVITIES = {"walking", "running"}  # their `cycles` count strides: 2 steps each
SLEEP_LEVELS = {"awake": "awake", "light": "core", "deep": "deep", "rem": "rem"}
SLEEP_LEVEL_SECONDS = 60  # the last level of a night lasts one epoch


def _fit_seconds(when: datetime) -> int:
    return int((when - FIT_EPOCH).total_seconds())


def _value(frame: Any, name: str) -> Any:
    return frame.get_value(name, fallback=None) if frame.has_field(name) else None


class _Reader:
    """State carried across messages: the clock, the zone, counters, pending intervals."""

    def __init__(self, ctx: ReadContext) -> None:
        self.zone: tzinfo = ctx.tz
        self.last_ts: int | None = None  # the last full timestamp, in FIT seconds
        self.origin = ""
        self.cycles: dict[str, tuple[float, int]] = {}  # activity -> (count, at)
        self.rr: list[float] = []
        self.rr_start: datetime | None = None
        self.rr_last: datetime | None = None
        self.sleep: tuple[str, datetime] | None = None
        self.last_monitoring: int | None = None

    def at(self, seconds: int) -> datetime:
        return (FIT_EPOCH + timedelta(seconds=seconds)).astimezone(self.zone)

    def rec(
        self,
        metric: str,
        start: datetime,
        end: datetime,
        value: float,
        unit: str,
        *,
        label: str = "",
    ) -> ReadingRecord:
        return ReadingRecord(metric, start, end, value, unit, label, self.origin, self.origin)

    def message(self, frame: Any) -> Iterator[ReadingRecord]:
        stamp = _value(frame, "timestamp")
        if isinstance(stamp, datetime):
            self.last_ts = _fit_seconds(stamp)
        handler = _MESSAGES.get(frame.name)
        if handler is not None:
            yield from handler(self, frame, stamp)

    def file_id(self, frame: Any, _stamp: Any) -> Iterable[ReadingRecord]:
        product = _value(frame, "garmin_product") or _value(frame, "product")
        maker = _value(frame, "manufacturer")
        self.origin = " ".join(str(p) for p in (maker, product) if p not in (None, ""))[:200]
        return ()

    def local_zone(self, frame: Any, stamp: Any) -> Iterable[ReadingRecord]:
        local = _value(frame, "local_timestamp")
        if isinstance(local, datetime) and isinstance(stamp, datetime):
            minutes = round((local - stamp).total_seconds() / 60)
            # Some devices write a local time that is no local time at all (a null
            # or a counter): real UTC offsets are within -12..+14 hours.
            if -12 * 60 <= minutes <= 14 * 60:
                self.zone = timezone(timedelta(minutes=minutes))
        return ()

    def hrv_message(self, frame: Any, _stamp: Any) -> Iterable[ReadingRecord]:
        self.hrv(frame)
        return ()

    def record(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        if not isinstance(stamp, datetime):
            return
        bpm = _value(frame, "heart_rate")
        if bpm:
            when = stamp.astimezone(self.zone)
            yield self.rec("heart_rate", when, when, float(bpm), "bpm")
        if self.rr_start is None:
            self.rr_start = stamp
        self.rr_last = stamp
        if self.rr and stamp - self.rr_start >= HRV_WINDOW:
            yield from self.flush_hrv(stamp)

    def session(self, frame: Any, _stamp: Any) -> Iterator[ReadingRecord]:
        """One activity (a run, a ride): a workout like Apple's and WHOOP's."""
        start = _value(frame, "start_time")
        seconds = _value(frame, "total_elapsed_time") or _value(frame, "total_timer_time")
        if not isinstance(start, datetime) or not seconds or seconds <= 0:
            return
        start = start.astimezone(self.zone)
        end = start + timedelta(seconds=float(seconds))
        sport = str(_value(frame, "sport") or "")[:64]
        yield self.rec("workout", start, end, float(seconds) / 60, "min", label=sport)
        energy, metres = _value(frame, "total_calories"), _value(frame, "total_distance")
        if energy:
            yield self.rec("workout_energy", start, end, float(energy), "kcal", label=sport)
        if metres:
            km = round(float(metres) / 1000, 4)
            yield self.rec("workout_distance", start, end, km, "km", label=sport)

    def hrv_value(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        value = _value(frame, "value")
        if stamp is not None and value:
            when = self.at(self.last_ts or 0)
            yield self.rec("hrv_rmssd", when, when + HRV_WINDOW, float(value), "ms")

    def hrv_status_summary(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        value = _value(frame, "last_night_average")
        if stamp is not None and value:
            when = self.at(self.last_ts or 0)
            yield self.rec("hrv_rmssd", when, when, float(value), "ms", label="night")

    def sleep_message(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        if stamp is not None:
            yield from self.sleep_level(frame)

    def stress_level(self, frame: Any, _stamp: Any) -> Iterator[ReadingRecord]:
        value, when = _value(frame, "stress_level_value"), _value(frame, "stress_level_time")
        if isinstance(when, datetime) and value is not None and 0 <= value <= 100:
            local = when.astimezone(self.zone)
            yield self.rec("stress", local, local, float(value), "score")

    def respiration_rate(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        value = _value(frame, "respiration_rate")
        if stamp is not None and value is not None and value > 0:
            when = self.at(self.last_ts or 0)
            yield self.rec("respiratory_rate", when, when, float(value), "breaths/min")

    def monitoring_hr_data(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        value = _value(frame, "resting_heart_rate")
        if stamp is not None and value:
            when = self.at(self.last_ts or 0)
            yield self.rec("resting_hr", when, when + timedelta(days=1), float(value), "bpm")

    def monitoring(self, frame: Any, stamp: Any) -> Iterator[ReadingRecord]:
        if not isinstance(stamp, datetime):
            t16 = _value(frame, "timestamp_16")
            if t16 is None or self.last_ts is None:
                return  # cannot place it in time
            # timestamp_16 is the low 16 bits of the time; it rolls over every ~18 h.
            self.last_ts += (int(t16) - (self.last_ts & 0xFFFF)) & 0xFFFF
        elif _value(frame, "duration_min") is not None:
            return  # a daily total: the intervals already carry these steps
        now = self.last_ts
        if now is None:
            return
        activity = _value(frame, "activity_type")
        cycles = _value(frame, "cycles")
        if cycles is None:
            cycles = _value(frame, "steps")
        since_any, self.last_monitoring = self.last_monitoring, now
        if activity in STEP_ACTIVITIES and cycles is not None:
            # A first count is what accumulated since the previous message of any type.
            count, since = self.cycles.get(activity, (0.0, since_any if since_any else now - 60))
            self.cycles[activity] = (float(cycles), now)
            # The counters restart each day: a smaller count is a fresh day's first.
            delta = float(cycles) - count if cycles >= count else float(cycles)
            if delta > 0 and now > since:
                yield self.rec("steps", self.at(since), self.at(now), delta * 2, "count")
        bpm = _value(frame, "heart_rate")
        if bpm:
            when = self.at(now)
            yield self.rec("heart_rate", when, when, float(bpm), "bpm")

    def hrv(self, frame: Any) -> None:
        times = _value(frame, "time") or ()
        if not isinstance(times, tuple | list):
            times = (times,)
        self.rr.extend(float(t) for t in times if t is not None)

    def flush_hrv(self, until: datetime | None = None) -> Iterator[ReadingRecord]:
        rr, start, end = self.rr, self.rr_start, until or self.rr_last
        self.rr, self.rr_start = [], until
        rmssd = rmssd_ms(rr)
        if rmssd is None or start is None or end is None:
            return
        zone = self.zone
        yield self.rec(
            "hrv_rmssd", start.astimezone(zone), end.astimezone(zone), rmssd, "ms", label="rr"
        )

    def sleep_level(self, frame: Any) -> Iterator[ReadingRecord]:
        """A level lasts until the next one (or one epoch, for the night's last)."""
        if self.last_ts is None:
            return
        when = self.at(self.last_ts)
        level = str(_value(frame, "sleep_level") or "")
        yield from self.end_sleep(when)
        label = SLEEP_LEVELS.get(level)
        self.sleep = (label, when) if label else None

    def end_sleep(self, when: datetime | None) -> Iterator[ReadingRecord]:
        if self.sleep is None:
            return
        label, start = self.sleep
        end = when or start + timedelta(seconds=SLEEP_LEVEL_SECONDS)
        self.sleep = None
        if end > start:
            yield self.rec(
                "sleep", start, end, (end - start).total_seconds() / 60, "min", label=label
            )

    def finish(self) -> Iterator[ReadingRecord]:
        yield from self.flush_hrv()
        yield from self.end_sleep(None)


# FIT message name -> what the reader takes from it (messages not here: nothing).
_MESSAGES: dict[str, Callable[[_Reader, Any, Any], Iterable[ReadingRecord]]] = {
    "file_id": _Reader.file_id,
    "monitoring_info": _Reader.local_zone,
    "activity": _Reader.local_zone,
    "monitoring": _Reader.monitoring,
    "hrv": _Reader.hrv_message,
    "record": _Reader.record,
    "session": _Reader.session,
    "hrv_value": _Reader.hrv_value,
    "hrv_status_summary": _Reader.hrv_status_summary,
    "sleep_level": _Reader.sleep_message,
    "stress_level": _Reader.stress_level,
    "respiration_rate": _Reader.respiration_rate,
    "monitoring_hr_data": _Reader.monitoring_hr_data,
}


def read(path: Path, ctx: ReadContext) -> Iterator[ReadingRecord]:
    """Every reading of one FIT file; a bad CRC or a broken header refuses the file."""
    path = Path(path)
    return iter(records(str(path), str(path), ctx))


def records(fit_file: str | IO[bytes], name: str, ctx: ReadContext) -> list[ReadingRecord]:
    """The readings of a FIT file (a path or a binary file object), all or nothing."""
    import fitdecode

    out: list[ReadingRecord] = []
    state = _Reader(ctx)
    try:
        with fitdecode.FitReader(
            fit_file,
            check_crc=fitdecode.CrcCheck.RAISE,
            # What this relaxes is what the Garmin FIT SDK reads too: a field size that is
            # no multiple of its base type (COROS) is read as bytes, developer data
            # without its id as unknown. The CRC is still checked.
            error_handling=fitdecode.ErrorHandling.IGNORE,
        ) as fit:
            for frame in fit:
                if isinstance(frame, fitdecode.FitDataMessage):
                    out.extend(state.message(frame))
        out.extend(state.finish())
    except fitdecode.FitError as err:
        raise InputError(f"{name}: not a readable FIT file ({err})") from None
    except _DECODER_FAILURES as err:
        # A forged header or field size trips the decoder's own checks (an assert, a
        # struct size) before any CRC could: still a file we cannot read, not a crash.
        raise InputError(
            f"{name}: not a readable FIT file (decoder failed: {type(err).__name__}: {err})"
        ) from None
    except OSError as err:
        raise InputError(f"{name}: cannot read: {err.strerror or err}") from None
    if not out and not state.origin:
        raise InputError(f"{name}: no FIT data inside")
    # FIT files are small (kilobytes to a few MB): reading fully first means a bad CRC at
    # the end refuses the file before any record is yielded.
    return out
