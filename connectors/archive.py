"""Opening a downloaded ZIP safely: damaged files, zip-slip names and zip bombs.

Nothing is ever extracted to disk (members are streamed), but an archive with `..` or
absolute member names was not written by Apple or Garmin, so it is refused outright. A
member that claims to expand more than MAX_RATIO times is refused before a byte of it is
inflated; zipfile itself stops at the declared size, so the claim cannot be exceeded.
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

from bridge.errors import InputError

# Real exports compress about 20x (XML) and 10-30x (JSON); zeros compress 1000x.
MAX_RATIO = 200
RATIO_FLOOR = 10 << 20  # small members may compress arbitrarily well


def open_zip(path: Path, what: str) -> zipfile.ZipFile:
    """A ZipFile whose member names are safe; InputError names the file and problem."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise InputError(f"{path}: not a zip file or damaged (is the download complete?)") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    for info in archive.infolist():
        name = info.filename.replace("\\", "/")
        if name.startswith("/") or ".." in PurePosixPath(name).parts or ":" in name[:3]:
            archive.close()
            raise InputError(
                f"{path}: unsafe member name {info.filename!r}; not a {what}, refusing it"
            )
    return archive


def check_member(path: Path, info: zipfile.ZipInfo) -> None:
    """Refuse a member that would expand suspiciously far (a zip bomb)."""
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(1, info.compress_size):
        ratio = info.file_size // max(1, info.compress_size)
        raise InputError(
            f"{path}: member {info.filename} would expand {ratio}x to "
            f"{info.file_size >> 20} MB; refusing a likely zip bomb"
        )


def read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A whole member (for small JSON files), bounded by `limit` bytes."""
    check_member(path, info)
    if info.file_size > limit:
        raise InputError(
            f"{path}: member {info.filename} is {info.file_size >> 20} MB, more than the "
            f"{limit >> 20} MB such a file ever holds"
        )
    try:
        with archive.open(info) as fh:
            return fh.read(limit + 1)[:limit]
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise InputError(f"{path}: damaged member {info.filename}: {err}") from None
