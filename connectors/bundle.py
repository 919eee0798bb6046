"""An export that comes as a ZIP or as the folder it unzips to (Fitbit, WHOOP).

Readers see member names relative to the root, with "/" separators, in both cases, and
read one member at a time: small JSON files whole (bounded), CSV files as a stream of
lines. A folder has no content hash of its own; `folder_sha256` stands for one, over the
names and bytes of the members a reader would read, so importing the same folder twice
adds nothing and a changed file makes it new.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import zipfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType

from bridge.errors import InputError
from connectors.archive import check_member, open_zip, read_member


class Bundle(AbstractContextManager["Bundle"]):
    """The members of a ZIP or a folder, by relative posix name."""

    def __init__(self, path: Path, what: str, *, single: bool = False) -> None:
        """`single`: `path` is one plain file, the bundle's only member."""
        self.path = Path(path)
        self.root = self.path  # where a folder's member names are relative to
        self.archive: zipfile.ZipFile | None = None
        self.infos: dict[str, zipfile.ZipInfo] = {}
        if single:
            self.root = self.path.parent
            self.names = [self.path.name]
        elif self.path.is_dir():
            self.names = sorted(
                p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file()
            )
        else:
            self.archive = open_zip(self.path, what)
            self.infos = {i.filename: i for i in self.archive.infolist() if not i.is_dir()}
            self.names = sorted(self.infos)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.archive is not None:
            self.archive.close()

    def where(self, name: str) -> str:
        """How messages name a member: the export, then the member."""
        return str(self.path) if self.root != self.path else f"{self.path}: {name}"

    def read(self, name: str, limit: int) -> bytes:
        """A whole member, refused when larger than `limit` bytes."""
        if self.archive is not None:
            return read_member(self.path, self.archive, self.infos[name], limit)
        file = self.root / name
        try:
            size = file.stat().st_size
            if size > limit:
                raise InputError(
                    f"{self.where(name)} is {size >> 20} MB, more than the {limit >> 20} MB "
                    "such a file ever holds"
                )
            return file.read_bytes()
        except OSError as err:
            raise InputError(f"{self.where(name)}: cannot read: {err.strerror or err}") from None

    def lines(self, name: str) -> Iterator[str]:
        """The member's text, line by line (UTF-8, a BOM dropped), without loading it."""
        raw: io.BufferedIOBase | io.RawIOBase
        try:
            if self.archive is not None:
                info = self.infos[name]
                check_member(self.path, info)
                raw = self.archive.open(info)  # type: ignore[assignment]
            else:
                raw = (self.root / name).open("rb")
        except (OSError, zipfile.BadZipFile) as err:
            raise InputError(f"{self.where(name)}: cannot read: {err}") from None
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        pending = ""
        try:
            with raw:
                while chunk := raw.read(1 << 16):
                    pending += decoder.decode(chunk)
                    *done, pending = pending.split("\n")
                    for line in done:
                        yield line.removesuffix("\r")
                pending += decoder.decode(b"", final=True)
        except UnicodeDecodeError as err:
            raise InputError(f"{self.where(name)}: not UTF-8 text ({err.reason})") from None
        except (OSError, zipfile.BadZipFile, EOFError) as err:
            raise InputError(f"{self.where(name)}: damaged: {err}") from None
        if pending:
            yield pending.removesuffix("\r")


def csv_rows(
    bundle: Bundle, name: str, needed: tuple[str, ...], hint: str
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row by lower-case column name) of a CSV member, blank rows left out.

    A header without one of `needed` is an InputError naming the file and the column,
    then `hint` (what the file should be); an empty member has no rows.
    """
    reader = csv.reader(bundle.lines(name))
    header = next(reader, None)
    if header is None:
        return
    columns = [c.strip().lower() for c in header]
    missing = [c for c in needed if c not in columns]
    if missing:
        raise InputError(f"{bundle.where(name)}: no {missing[0]!r} column; {hint}")
    try:
        for line, row in enumerate(reader, start=2):
            if any(cell.strip() for cell in row):
                yield (
                    line,
                    {c: row[i].strip() if i < len(row) else "" for i, c in enumerate(columns)},
                )
    except csv.Error as err:
        raise InputError(f"{bundle.where(name)}: malformed CSV ({err})") from None


def folder_sha256(path: Path, wanted: Callable[[str], bool]) -> tuple[str, int]:
    """A content hash of the members of a folder that `wanted` accepts, and their size."""
    digest = hashlib.sha256()
    size = 0
    for name in sorted(
        p.relative_to(path).as_posix() for p in Path(path).rglob("*") if p.is_file()
    ):
        if not wanted(name):
            continue
        digest.update(name.encode() + b"\0")
        try:
            with (path / name).open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
        except OSError as err:
            raise InputError(f"{path / name}: cannot read: {err.strerror or err}") from None
        digest.update(b"\0")
    return digest.hexdigest(), size
