"""Backing up the store while the daemon runs.

SQLite: the online backup API copies a consistent snapshot page by page while writers
continue (WAL mode), then the copy is integrity-checked before it replaces FILE.
PostgreSQL: pg_dump, which is consistent by itself.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from bridge.errors import StoreError
from bridge.files import private_dir
from bridge.store import Store


def backup(store: Store, dest: Path) -> Path:
    """Write a consistent copy of the store to `dest` (mode 0600); atomic on success."""
    dest = Path(dest).expanduser()
    private_dir(dest.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if store.is_sqlite:
            _sqlite_backup(store, tmp)
        elif store.engine.dialect.name == "postgresql":
            _pg_dump(store, tmp)
        else:
            raise StoreError(f"backup is not supported for {store.engine.dialect.name}")
        os.chmod(tmp, 0o600)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _sqlite_backup(store: Store, tmp: Path) -> None:
    source_path = store.engine.url.database
    if not source_path or source_path == ":memory:":
        raise StoreError("an in-memory database cannot be backed up")
    src = sqlite3.connect(source_path, timeout=30)
    dst = sqlite3.connect(tmp)
    try:
        src.backup(dst, pages=1024)
        status = dst.execute("PRAGMA integrity_check").fetchone()[0]
        if status != "ok":
            raise StoreError(f"backup failed its integrity check: {status}")
    finally:
        dst.close()
        src.close()


def _pg_dump(store: Store, tmp: Path) -> None:
    exe = shutil.which("pg_dump")
    if exe is None:
        raise StoreError(
            "pg_dump not found; install the PostgreSQL client (apt install postgresql-client)"
        )
    url = store.engine.url
    env = {**os.environ}
    if url.password:
        env["PGPASSWORD"] = url.password  # never on the command line, where ps shows it
    args = [exe, "--format=custom", f"--file={tmp}", f"--dbname={url.database}"]
    if url.host:
        args.append(f"--host={url.host}")
    if url.port:
        args.append(f"--port={url.port}")
    if url.username:
        args.append(f"--username={url.username}")
    result = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StoreError(f"pg_dump failed: {result.stderr.strip().splitlines()[-1:]}")
