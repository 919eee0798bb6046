"""Every importer against the generated bad-input corpus (tests/bad_inputs/generate.py).

Each case must end in one clear line naming the file with nothing written, or in the bad
records skipped (with a warning) and the good ones kept, within bounded memory and time.
"""

import hashlib
from collections import Counter

import httpx
import pytest
import respx
from sqlmodel import select

from bridge.errors import InputError
from bridge.intake.ingest import import_feed, import_file
from bridge.store.models import CalendarEvent, ImportedFile, Reading, SyncState
from tests.bad_inputs.generate import CASES
from tests.bad_inputs.guards import bounded

RAN: Counter[str] = Counter()
FEED = "https://calendar.example.net/private/SECRET123/basic.ics"


def _stored_text(store) -> str:
    with store.session() as s:
        readings = s.exec(select(Reading.origin, Reading.device, Reading.label)).all()
        events = s.exec(select(CalendarEvent.title, CalendarEvent.uid)).all()
    return "".join("".join(row) for row in [*readings, *events])


def _check_error(case, message: str, named: str) -> None:
    assert "\n" not in message and named in message, message
    assert message.isprintable(), f"control characters in {message!r}"
    assert case.needle in message, message


def _check_kept(case, summary, store) -> None:
    assert summary.new >= 1, "the good records must be kept"
    if case.expect == "skip":
        assert summary.skipped, "the bad records must be skipped, and say so"
    else:
        assert not summary.skipped, summary.skipped
    stored = _stored_text(store)
    assert stored.isprintable(), "control characters were stored"
    if case.never_stored:
        assert case.never_stored not in stored


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.kind}/{c.name}")
def test_bad_input(case, store, ctx, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / case.name
    case.build(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with bounded():
        if case.expect == "error":
            with pytest.raises(InputError) as err:
                import_file(store, case.kind, path, ctx)
            _check_error(case, str(err.value), str(path))
            assert store.count(Reading) == store.count(CalendarEvent) == 0
            assert store.count(ImportedFile) == 0
        else:
            _check_kept(case, import_file(store, case.kind, path, ctx), store)
    if case.never_stored:
        assert case.never_stored not in _stored_text(store)
    # Nothing read or written outside its place: the input untouched, nothing beside it.
    assert [p.name for p in folder.iterdir()] == [case.name]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    RAN[case.expect] += 1


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.kind == "ics"], ids=lambda c: f"feed/{c.name}"
)
@respx.mock
def test_bad_feed(case, store, ctx, tmp_path):
    """The same calendars served as a subscribed feed: same answer, the cursor unmoved."""
    path = tmp_path / case.name
    case.build(path)
    respx.get(FEED).mock(
        return_value=httpx.Response(200, content=path.read_bytes(), headers={"ETag": '"1"'})
    )
    with bounded():
        if case.expect == "error":
            with pytest.raises(InputError) as err:
                import_feed(store, FEED, ctx)
            _check_error(case, str(err.value), "calendar.example.net")
            assert "SECRET123" not in str(err.value)
            assert store.count(CalendarEvent) == 0
            with store.session() as s:
                assert s.exec(select(SyncState)).all() == []  # no cursor, no ETag kept
        else:
            _check_kept(case, import_feed(store, FEED, ctx), store)
    RAN["feed"] += 1


def test_zz_summary(capsys):
    # Runs after the cases (pytest keeps file order); says how many ran.
    with capsys.disabled():
        print(
            f"\nbad-input corpus: {sum(RAN.values())} cases passed ({len(CASES)} files, "
            f"{RAN['feed']} of them again as feeds; {RAN['error']} rejected with one line, "
            f"{RAN['skip']} imported with skips, {RAN['accept']} odd but valid)"
        )
    assert len(CASES) >= 80 and sum(RAN.values()) >= 100
