"""Where real files from other projects and real people's data are read from.

They are never committed here (licences, privacy): they live in `../shared/` beside the
checkout (CI lays it there too), or wherever `RB_SHARED_DIR` points. A test that needs one
asks `shared_path(...)`, which skips that test (or, at import time, its module) with the
reason when the folder is absent, so a fresh clone alone still passes.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    return Path(os.environ.get("RB_SHARED_DIR") or ROOT.parent / "shared")


SHARED = shared_dir()
# Real files from other public projects, each folder with its SOURCES.md.
SHARED_FIXTURES = SHARED / "fixtures"
# Real people's data (PMData, HeartSteps), each with its README.
DATASETS = SHARED / "datasets"


def missing_reason(path: Path) -> str:
    return (
        f"{path} is absent: real files from other projects are read from ../shared/ "
        "(or $RB_SHARED_DIR) and never committed here"
    )


def shared_path(*parts: str) -> Path:
    """`SHARED_FIXTURES / parts`, or a skip naming what is missing."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        import pytest

        pytest.skip(missing_reason(path), allow_module_level=True)
    return path
