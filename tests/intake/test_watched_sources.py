"""Scheduled pulls of file sources: watched folders and .ics feed URLs."""

import json
import shutil
import zipfile

import httpx
import respx

from bridge.intake import ingest
from bridge.intake.sources import run_source
from bridge.store.models import CalendarEvent, ImportedFile, Reading
from tests.conftest import SAMPLE
from tests.connectors.test_garmin_export import SLEEP
from tests.shared import shared_path

NIGHT = SLEEP[0]  # in bed, deep, light, rem, awake and respiration: 6 readings


def _with(settings, name, **values):
    section = getattr(settings.sources, name).model_copy(update={"enabled": True, **values})
    return settings.model_copy(
        update={"sources": settings.sources.model_copy(update={name: section})}
    )


def _garmin_zip(path, nights):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("DI_CONNECT/DI-Connect-Wellness/1_sleepData.json", json.dumps(nights))
    return path


def test_garmin_export_dir_imports_new_and_changed_files_only(
    store, settings, ctx, tmp_path, monkeypatch
):
    folder = tmp_path / "garmin"
    folder.mkdir()
    _garmin_zip(folder / "export.zip", [NIGHT])
    shutil.copy(shared_path("garmin", "fit", "MonitoringFile.fit"), folder / "monitor.fit")
    settings = _with(settings, "garmin", export_dir=str(folder))
    first = run_source(store, settings, "garmin", ctx)
    assert first.status == "ok" and first.new == first.records == store.count(Reading) == 85
    assert store.count(ImportedFile) == 2

    # Unchanged files are recognised without reading them again.
    def no_hashing(path):
        raise AssertionError(f"{path} was hashed again")

    monkeypatch.setattr(ingest, "file_sha256", no_hashing)
    again = run_source(store, settings, "garmin", ctx)
    assert again.status == "ok" and again.records == 0
    monkeypatch.undo()

    # A changed file (new content) is imported; only its new rows count.
    next_night = {
        **NIGHT,
        "calendarDate": "2026-11-19",
        "sleepStartTimestampGMT": "2026-11-18T22:00:00.0",
        "sleepEndTimestampGMT": "2026-11-19T06:00:00.0",
    }
    _garmin_zip(folder / "export.zip", [NIGHT, next_night])
    changed = run_source(store, settings, "garmin", ctx)
    assert changed.status == "ok" and changed.new == 6 and store.count(Reading) == 91


def test_a_bad_file_in_a_watched_folder_does_not_block_the_others(store, settings, ctx, tmp_path):
    folder = tmp_path / "apple"
    folder.mkdir()
    (folder / "a-broken.zip").write_bytes(b"not a zip")
    shutil.copy(SAMPLE / "apple_health_export.zip", folder / "b-export.zip")
    settings = _with(settings, "apple_health", watch_dir=str(folder))
    outcome = run_source(store, settings, "apple_health", ctx)
    assert outcome.status == "error" and "a-broken.zip: not a zip file" in outcome.error
    assert store.count(Reading) == 4219  # the good export beside it was imported


@respx.mock
def test_ics_urls_are_polled_with_validators(store, settings, ctx):
    url = "https://outlook.office365.com/owa/calendar/abc/def/reachcalendar.ics"
    route = respx.get(url).mock(
        side_effect=[
            httpx.Response(
                200, content=(SAMPLE / "calendar.ics").read_bytes(), headers={"ETag": 'W/"7"'}
            ),
            httpx.Response(304),
        ]
    )
    settings = _with(settings, "ics", urls=[url])
    first = run_source(store, settings, "ics", ctx)
    assert first.status == "ok" and first.new == store.count(CalendarEvent) > 100
    second = run_source(store, settings, "ics", ctx)
    assert second.status == "ok" and second.records == 0
    assert route.calls[1].request.headers["If-None-Match"] == 'W/"7"'


@respx.mock
def test_a_revoked_feed_is_reported_without_its_secret(store, settings, ctx):
    url = "https://calendar.google.com/calendar/ical/me%40x.com/private-0123456789abcdef/basic.ics"
    respx.get(url).mock(return_value=httpx.Response(404))
    outcome = run_source(store, _with(settings, "ics", urls=[url]), "ics", ctx)
    assert outcome.status == "error" and "revoked" in outcome.error
    assert "private-0123" not in outcome.error
