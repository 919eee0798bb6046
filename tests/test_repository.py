"""What the repository holds: none of the real files taken from other projects or studies
(they are read from ../shared/), and a test tree laid out like the package it tests."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.shared import DATASETS, ROOT, SHARED_FIXTURES, missing_reason

# Stage folders of bridge/ and the top-level packages each have their tests' folder.
TEST_FOLDERS = {
    "bad_inputs",  # every importer and parser against hostile input, in one place
    "cli",
    "connectors",
    "cycle",
    "daemon",
    "fixtures",
    "intake",
    "learning",
    "mappings",
    "out",
    "runner",
    "sim",
    "store",
    "web",
}


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / name for name in out.split("\0") if name and (ROOT / name).is_file()]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copies(tracked: list[Path], theirs: list[Path]) -> list[str]:
    # Small files (an empty JSON, a two-line SOURCES.md) collide by chance, not by copying.
    known = {_digest(p) for p in theirs if p.is_file() and p.stat().st_size > 200}
    return [p.name for p in tracked if _digest(p) in known]


@pytest.mark.skipif(not SHARED_FIXTURES.is_dir(), reason=missing_reason(SHARED_FIXTURES))
def test_no_file_from_another_project_or_study_is_committed() -> None:
    theirs = [*SHARED_FIXTURES.rglob("*"), *DATASETS.rglob("*")]
    assert _copies(_tracked(), theirs) == []


def test_the_copy_check_finds_a_renamed_copy(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.fit"
    theirs.write_bytes(bytes(range(256)) * 2)
    copy = tmp_path / "ours.fit"
    copy.write_bytes(theirs.read_bytes())
    assert _copies([ROOT / "README.md", copy], [theirs]) == ["ours.fit"]


def test_tests_mirror_the_package() -> None:
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders == TEST_FOLDERS
    stages = {p.name for p in (ROOT / "bridge").iterdir() if (p / "__init__.py").is_file()}
    # Every stage with code of its own has a folder of tests, except the bundled sample data
    # and the schemas (data read by the demo and snapshot tests).
    assert stages - {"sample_data", "schemas", "auth"} <= folders, stages - folders
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    # What stays at the top tests the whole tree, not one stage.
    assert loose == [
        "test_config.py",
        "test_docs.py",
        "test_layout.py",
        "test_packaging.py",
        "test_repository.py",
    ], loose
