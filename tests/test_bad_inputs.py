"""Every importer against the generated bad-input corpus (tests/bad_inputs/generate.py).

Each case must end in one clear line naming the file with nothing written, or in the bad
records skipped (with a warning) and the good ones kept, within bounded memory and time.
"""

from collections import Counter

import pytest

from bridge.errors import InputError
from bridge.intake.ingest import import_file
from bridge.store.models import CalendarEvent, ImportedFile, Reading
from tests.bad_inputs.generate import CASES
from tests.bad_inputs.guards import bounded

RAN: Counter[str] = Counter()


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.kind}/{c.name}")
def test_bad_input(case, store, ctx, tmp_path):
    path = tmp_path / case.name
    case.build(path)
    with bounded():
        if case.expect == "error":
            with pytest.raises(InputError) as err:
                import_file(store, case.kind, path, ctx)
            message = str(err.value)
            assert "\n" not in message and str(path) in message
            assert store.count(Reading) == store.count(CalendarEvent) == 0
            assert store.count(ImportedFile) == 0
        else:
            summary = import_file(store, case.kind, path, ctx)
            assert summary.new >= 1, "the good records must be kept"
            if case.expect == "skip":
                assert summary.skipped, "the bad records must be skipped, and say so"
            else:
                assert not summary.skipped
    RAN[case.expect] += 1


def test_zz_summary(capsys):
    # Runs after the cases (pytest keeps file order); says how many ran.
    with capsys.disabled():
        print(
            f"\nbad-input corpus: {sum(RAN.values())} of {len(CASES)} cases passed "
            f"({RAN['error']} rejected with one line, {RAN['skip']} imported with skips, "
            f"{RAN['accept']} odd but valid)"
        )
    assert len(CASES) >= 20
