"""The encrypted-file keyring backend and how the backend is chosen."""

from __future__ import annotations

import stat
from pathlib import Path

import keyring
import keyring.backend
import pytest

from bridge.auth.secrets import KEY_ENV, SERVICE, EncryptedFileKeyring, Secrets, choose_backend
from bridge.errors import ConfigError


def test_round_trip_is_encrypted_atomic_and_private(tmp_path: Path) -> None:
    path = tmp_path / "k" / "secrets.keyring"
    ring = EncryptedFileKeyring(path)
    ring.set_password(SERVICE, "whoop:token", "s3cr3t-refresh-value")
    ring.set_password(SERVICE, "garmin:api_key", "another-value")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    assert b"s3cr3t" not in raw and b"another-value" not in raw
    leftovers = sorted(p.name for p in path.parent.iterdir())
    assert leftovers == ["secrets.keyring", "secrets.keyring.lock"]  # no temp file left
    again = EncryptedFileKeyring(path)
    assert again.get_password(SERVICE, "whoop:token") == "s3cr3t-refresh-value"
    again.delete_password(SERVICE, "whoop:token")
    assert EncryptedFileKeyring(path).get_password(SERVICE, "whoop:token") is None
    assert EncryptedFileKeyring(path).get_password(SERVICE, "garmin:api_key") == "another-value"
    with pytest.raises(keyring.errors.PasswordDeleteError):
        again.delete_password(SERVICE, "whoop:token")


def test_wrong_key_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secrets.keyring"
    EncryptedFileKeyring(path).set_password(SERVICE, "a", "b")
    monkeypatch.setenv(KEY_ENV, "a-different-key")
    with pytest.raises(ConfigError, match="does not decrypt"):
        EncryptedFileKeyring(path).get_password(SERVICE, "a")


def test_key_from_systemd_credentials_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "keyring-key").write_text("from-systemd\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    path = tmp_path / "secrets.keyring"
    EncryptedFileKeyring(path).set_password(SERVICE, "a", "b")
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    monkeypatch.setenv(KEY_ENV, "from-systemd")
    assert EncryptedFileKeyring(path).get_password(SERVICE, "a") == "b"


def test_no_key_says_how_to_provide_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    ring = EncryptedFileKeyring(tmp_path / "secrets.keyring")
    assert ring.priority < 0
    with pytest.raises(ConfigError, match="LoadCredential=keyring-key"):
        ring.set_password(SERVICE, "a", "b")


class _Desktop(keyring.backend.KeyringBackend):
    priority = 5  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        pass

    def delete_password(self, service: str, username: str) -> None:
        pass


def test_auto_uses_a_usable_system_keyring_else_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # conftest made the system keyring the "fail" backend, as on a headless server.
    assert isinstance(choose_backend("auto", tmp_path / "f"), EncryptedFileKeyring)
    monkeypatch.setattr(keyring.core, "_keyring_backend", _Desktop())
    assert isinstance(choose_backend("auto", tmp_path / "f"), _Desktop)
    assert isinstance(choose_backend("file", tmp_path / "f"), EncryptedFileKeyring)


def test_secrets_json_helpers(secrets: Secrets) -> None:
    assert secrets.get_json("x") is None
    secrets.set_json("x", {"a": 1})
    assert secrets.get_json("x") == {"a": 1}
    assert secrets.delete("x") and not secrets.delete("x")
    assert "encrypted file" in secrets.description


def _write_many(path: str, who: int) -> None:
    ring = EncryptedFileKeyring(path)
    for i in range(3):
        ring.set_password(SERVICE, f"p{who}-{i}", f"v{who}-{i}")


def test_writers_in_several_processes_lose_nothing(tmp_path: Path) -> None:
    import multiprocessing

    path = str(tmp_path / "secrets.keyring")
    procs = [
        multiprocessing.get_context("fork").Process(target=_write_many, args=(path, n))
        for n in range(3)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    ring = EncryptedFileKeyring(path)
    assert all(
        ring.get_password(SERVICE, f"p{n}-{i}") == f"v{n}-{i}" for n in range(3) for i in range(3)
    )


def _set_in_another_process(path: str, value: str) -> None:
    EncryptedFileKeyring(path).set_password(SERVICE, "whoop:token", value)


def test_a_reader_sees_what_another_process_wrote(tmp_path: Path) -> None:
    # A worker keeps the decrypted file while its bytes stay the same: a token another
    # process rotated must still be the one it reads next.
    import multiprocessing

    path = tmp_path / "secrets.keyring"
    reader = EncryptedFileKeyring(path)
    reader.set_password(SERVICE, "whoop:token", "first")
    assert reader.get_password(SERVICE, "whoop:token") == "first"
    proc = multiprocessing.get_context("fork").Process(
        target=_set_in_another_process, args=(str(path), "second")
    )
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert reader.get_password(SERVICE, "whoop:token") == "second"
    assert reader.names(SERVICE) == ["whoop:token"]


def test_a_write_that_fails_leaves_what_is_read_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the process keeps decrypted is changed only by a write that reached the file.
    import os

    path = tmp_path / "secrets.keyring"
    ring = EncryptedFileKeyring(path)
    ring.set_password(SERVICE, "whoop:token", "kept")

    def refuse(*args: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", refuse)
        with pytest.raises(OSError):
            ring.set_password(SERVICE, "whoop:token", "never-written")
        with pytest.raises(OSError):
            ring.delete_password(SERVICE, "whoop:token")
    assert ring.get_password(SERVICE, "whoop:token") == "kept"
    assert EncryptedFileKeyring(path).get_password(SERVICE, "whoop:token") == "kept"
