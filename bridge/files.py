"""Private files: health data and secrets are readable by the person running us, nobody else.

Every folder the program creates is 0700 and every file it writes 0600, whatever the
umask: the usual 022 would make the database, its WAL/SHM files and the exports readable
by every local user of a shared home server. `make_private` fixes an install made by an
older release once, and says so in the log.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("rhythm_bridge.files")

FILE_MODE = 0o600
DIR_MODE = 0o700
# What the faces run under: files and folders that libraries create themselves (SQLite's
# WAL/SHM, numpy's archives) come out private too.
UMASK = 0o077
# A data folder is ours and small; a walk this long means it points somewhere it should not.
MAX_WALK = 10_000


def private_dir(path: Path) -> Path:
    """Create `path` and any missing parents as 0700; folders that exist are left alone."""
    path = Path(path).expanduser()
    missing = []
    here = path
    while not here.exists():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # another process made it first: its mode is its own business
        os.chmod(folder, DIR_MODE)  # mkdir's mode passes through the umask
    return path


def private_file(path: Path) -> Path:
    """Make sure `path` exists as a 0600 file: created empty if missing, tightened (once,
    logged) if an older release left it readable by others. A file someone else owns is
    left alone: it is theirs, and changing it is not ours to do."""
    path = Path(path)
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        st = path.stat()
        if _too_open(st.st_mode) and st.st_uid == os.geteuid():
            os.chmod(path, FILE_MODE)
            log.warning("%s: made private to this user (0600); others could read it", path)
        return path
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def write_private(path: Path, data: bytes) -> Path:
    """Write `data` to `path` as 0600, atomically (a temp file in the same folder, renamed)."""
    path = Path(path)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), FILE_MODE)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


@contextmanager
def private_umask() -> Iterator[None]:
    """Run a block under umask 077, restoring the caller's afterwards."""
    old = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(old)


def _too_open(mode: int) -> bool:
    return bool(mode & 0o077)


def make_private(data_dir: Path) -> int:
    """Tighten the data folder and everything in it to 0700/0600; return how many changed.

    Releases before this one created the database 0644 in a 0755 folder. Only entries
    other users could reach are changed, so this logs once, on the first start after the
    upgrade. Symlinks are not followed: what they point to is not ours to change.
    """
    root = Path(data_dir).expanduser()
    try:
        top = root.lstat()
    except OSError:
        return 0
    if not stat.S_ISDIR(top.st_mode) or root == Path.home() or root == Path(root.anchor):
        return 0
    changed = 0
    seen = 0
    for folder, dirs, names in os.walk(root):
        for name, mode in (
            (folder, DIR_MODE),
            *((os.path.join(folder, n), FILE_MODE) for n in names),
        ):
            seen += 1
            try:
                st = os.lstat(name)
                if stat.S_ISLNK(st.st_mode) or not _too_open(st.st_mode):
                    continue
                if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                    os.chmod(name, mode)
                    changed += 1
            except OSError as err:
                log.warning("%s: cannot make it private: %s", name, err.strerror or err)
        if seen > MAX_WALK:
            log.warning("%s: more than %d entries; stopped making them private", root, MAX_WALK)
            break
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    if changed:
        log.warning(
            "%s: made %d files and folders private to this user (files 0600, folders 0700); "
            "other local users could read them before",
            root,
            changed,
        )
    return changed
