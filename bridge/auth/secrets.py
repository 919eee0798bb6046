"""Secrets (tokens, client secrets, API keys) through the keyring API, and nothing else.

A desktop keeps them in its keyring (Secret Service, macOS Keychain, ...). A headless
server has none, so `keyring` would fail: there `EncryptedFileKeyring` takes over, a
keyring backend that keeps every secret in one file (mode 0600) encrypted with a key the
person provides out of band:

    1. systemd: `LoadCredential=keyring-key:/etc/rhythm-bridge/keyring.key` in the unit
       (the key is then read from `$CREDENTIALS_DIRECTORY/keyring-key`), or
    2. the environment variable `RHYTHM_BRIDGE_KEYRING_KEY`.

Any string works as the key (e.g. `openssl rand -base64 32`); it is stretched with scrypt
and a per-file salt. `[secrets] backend` in the config forces one choice.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import keyring
import keyring.backend
import keyring.errors

from bridge.config import DEFAULT_PERSON, KEYRING_KEY_ENV
from bridge.errors import ConfigError
from bridge.files import private_dir
from bridge.logs import register_secret

SERVICE = "rhythm-bridge"
# The entry listing the names of a person's other entries (see Secrets._remember).
_INDEX = "_names"
KEY_ENV = KEYRING_KEY_ENV
CREDENTIAL_NAME = "keyring-key"
FILE_NAME = "secrets.keyring"
_FORMAT = "rhythm-bridge-keyring@1"
# Libraries that log token request bodies and responses at DEBUG level.
SECRET_BEARING_LOGGERS = ("requests_oauthlib", "oauthlib")


def quiet_secret_loggers() -> None:
    """Cap the loggers that would print tokens at WARNING, whatever the root level is."""
    for name in SECRET_BEARING_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _key_material() -> str | None:
    """The file key from systemd credentials first, then the environment; None if neither."""
    cred_dir = os.environ.get("CREDENTIALS_DIRECTORY")
    if cred_dir:
        path = Path(cred_dir) / CREDENTIAL_NAME
        with contextlib.suppress(OSError):
            text = path.read_text(encoding="utf-8").strip()
            if text:
                return text
    return os.environ.get(KEY_ENV, "").strip() or None


@lru_cache(maxsize=8)
def _derive(material: str, salt: bytes) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    raw = Scrypt(salt=salt, length=32, n=2**14, r=8, p=1).derive(material.encode())
    return base64.urlsafe_b64encode(raw)


class EncryptedFileKeyring(keyring.backend.KeyringBackend):
    """A keyring backend: one Fernet-encrypted JSON file, written atomically with mode 0600."""

    _lock = threading.Lock()
    # (file, key) -> (the file's bytes, what they decrypt to): shared by the instances of
    # one process, since every Secrets.from_settings makes a new one.
    _decrypted: ClassVar[dict[tuple[Path, str], tuple[bytes, dict[str, dict[str, str]]]]] = {}

    def __init__(self, path: Path | str | None = None, key: str | None = None) -> None:
        super().__init__()
        self.path = Path(path) if path else default_file()
        self._key = key
        self._salt: bytes | None = None

    @property
    def priority(self) -> float:
        # Viable only with a key; below desktop keyrings so they win when present.
        return 0.5 if (self._key or _key_material()) else -1

    def _material(self) -> str:
        material = self._key or _key_material()
        if not material:
            raise ConfigError(
                f"no key for the encrypted keyring {self.path} (no desktop keyring here): "
                f"set {KEY_ENV} to a key of your own, the same every time (make one with "
                "`openssl rand -base64 32` and keep it, e.g. in your shell profile); as a "
                "service the unit's "
                f"LoadCredential={CREDENTIAL_NAME}:/etc/rhythm-bridge/keyring.key gives it"
            )
        return material

    def _load(self) -> dict[str, dict[str, str]]:
        """The file's secrets. Callers must not change what it returns (`_changed` copies).

        The decrypted file is kept with the bytes it came from and reused while the file
        holds the same bytes: a worker serving many people reads tokens far more often than
        anyone writes them, and decrypting the whole household's file each time was most of
        a sync's CPU."""
        from cryptography.fernet import Fernet, InvalidToken

        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as err:
            raise ConfigError(f"{self.path}: unreadable keyring file: {err}") from None
        cached = self._decrypted.get(self._cache_key())
        if cached is not None and cached[0] == raw:
            return cached[1]
        try:
            doc = json.loads(raw.decode("utf-8"))
        except ValueError as err:
            raise ConfigError(f"{self.path}: unreadable keyring file: {err}") from None
        if doc.get("format") != _FORMAT:
            raise ConfigError(f"{self.path}: not a rhythm-bridge keyring file")
        self._salt = base64.b64decode(doc["salt"])
        key = _derive(self._material(), self._salt)
        try:
            plain = Fernet(key).decrypt(doc["data"].encode())
        except InvalidToken:
            raise ConfigError(
                f"{self.path}: the keyring key does not decrypt this file (wrong {KEY_ENV} "
                f"or {CREDENTIAL_NAME} credential?)"
            ) from None
        data: dict[str, dict[str, str]] = json.loads(plain)
        self._decrypted[self._cache_key()] = (raw, data)
        return data

    def _cache_key(self) -> tuple[Path, str]:
        return (self.path.absolute(), self._material())

    def _changed(self, service: str) -> dict[str, dict[str, str]]:
        """A copy of the file's secrets to change `service` in (the cached one stays as read)."""
        data = dict(self._load())
        data[service] = dict(data.get(service, {}))
        return data

    def _save(self, data: dict[str, dict[str, str]]) -> None:
        from cryptography.fernet import Fernet

        # Keep the file's salt (Fernet adds a fresh IV per write): one KDF run per process.
        salt = self._salt or os.urandom(16)
        self._salt = salt
        token = Fernet(_derive(self._material(), salt)).encrypt(json.dumps(data).encode())
        doc = {"format": _FORMAT, "salt": base64.b64encode(salt).decode(), "data": token.decode()}
        raw = json.dumps(doc).encode("utf-8")
        private_dir(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)  # readers see the old or the new file, never half
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        os.chmod(self.path, 0o600)
        self._decrypted[self._cache_key()] = (raw, data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Read-modify-write under a lock shared by every process (daemon, CLI)."""
        private_dir(self.path.parent)
        with self._lock:
            fd = os.open(
                self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def get_password(self, service: str, username: str) -> str | None:
        with self._lock:
            return self._load().get(service, {}).get(username)

    def set_password(self, service: str, username: str, password: str) -> None:
        with self._locked():
            data = self._changed(service)
            data[service][username] = password
            self._save(data)

    def names(self, service: str) -> list[str]:
        with self._lock:
            return list(self._load().get(service, {}))

    def delete_password(self, service: str, username: str) -> None:
        with self._locked():
            data = self._changed(service)
            if username not in data[service]:
                raise keyring.errors.PasswordDeleteError(f"{service}/{username} not found")
            del data[service][username]
            self._save(data)


def default_file() -> Path:
    """Where the encrypted keyring lives: $STATE_DIRECTORY or the platform data dir."""
    if os.environ.get("STATE_DIRECTORY"):
        return Path(os.environ["STATE_DIRECTORY"].split(":")[0]) / FILE_NAME
    from platformdirs import user_data_path

    return user_data_path("rhythm-bridge") / FILE_NAME


def _usable(backend: keyring.backend.KeyringBackend) -> bool:
    from keyring.backends import chainer, fail

    if isinstance(backend, fail.Keyring):
        return False
    if isinstance(backend, chainer.ChainerBackend):
        return bool(backend.backends)
    # keyrings.alt's plaintext and "null" backends have priority <= 0: not a safe place.
    try:
        return float(backend.priority) > 0
    except Exception:
        return False


def choose_backend(mode: str = "auto", path: Path | None = None) -> keyring.backend.KeyringBackend:
    """The backend for `mode`: "auto" (system keyring if usable, else file), "system", "file"."""
    if mode == "file":
        return EncryptedFileKeyring(path)
    system = keyring.get_keyring()
    if mode == "system" or _usable(system):
        return system
    return EncryptedFileKeyring(path)


def service_of(person: str) -> str:
    """The keyring service holding `person`'s secrets. The default person keeps the plain
    service, so a one-person install's entries stay where earlier releases put them."""
    return SERVICE if person == DEFAULT_PERSON else f"{SERVICE}/{person}"


class Secrets:
    """Named secrets of one person of this app (`whoop:token`, ...) in one keyring backend:
    each person's entries under their own keyring service (`service_of`)."""

    def __init__(
        self, backend: keyring.backend.KeyringBackend, person: str = DEFAULT_PERSON
    ) -> None:
        self.backend = backend
        self.person = person
        self.service = service_of(person)

    @classmethod
    def from_settings(cls, settings: Any) -> Secrets:
        cfg = settings.secrets
        path = Path(cfg.file).expanduser() if cfg.file else settings.data_path / FILE_NAME
        return cls(choose_backend(cfg.backend, path), getattr(settings, "person", DEFAULT_PERSON))

    @property
    def description(self) -> str:
        if isinstance(self.backend, EncryptedFileKeyring):
            return f"encrypted file {self.backend.path}"
        return f"{type(self.backend).__module__}.{type(self.backend).__name__}"

    def get(self, name: str) -> str | None:
        try:
            value = self.backend.get_password(self.service, name)
        except keyring.errors.KeyringError as err:
            raise ConfigError(f"keyring ({self.description}) failed: {err}") from None
        _mask_in_logs(value)
        return value

    def set(self, name: str, value: str) -> None:
        _mask_in_logs(value)
        try:
            self.backend.set_password(self.service, name, value)
            self._remember(name)
        except keyring.errors.KeyringError as err:
            raise ConfigError(f"keyring ({self.description}) failed: {err}") from None

    def _remember(self, name: str) -> None:
        # Most keyrings cannot list their entries; the names kept here let `person remove`
        # delete every secret of a person.
        names = self._names()
        if name != _INDEX and name not in names:
            self.backend.set_password(self.service, _INDEX, json.dumps(sorted({*names, name})))

    def _names(self) -> frozenset[str]:
        try:
            raw = self.backend.get_password(self.service, _INDEX)
            names = json.loads(raw) if raw else []
        except (keyring.errors.KeyringError, ValueError):
            return frozenset()
        if not isinstance(names, list):
            return frozenset()
        return frozenset(n for n in names if isinstance(n, str))

    def forget_all(self) -> int:
        """Delete every secret of this person (`person remove`); returns how many."""
        names = self._names()
        if isinstance(self.backend, EncryptedFileKeyring):
            names |= frozenset(self.backend.names(self.service))  # also what older releases set
        count = sum(self.delete(name) for name in sorted(names - {_INDEX}))
        self.delete(_INDEX)
        return count

    def put(self, name: str, value: str | None) -> None:
        """Store `value` under `name`; None or "" forgets it (a `--clear` option)."""
        if value:
            self.set(name, value)
        else:
            self.delete(name)

    def delete(self, name: str) -> bool:
        try:
            self.backend.delete_password(self.service, name)
        except keyring.errors.PasswordDeleteError:
            return False
        except keyring.errors.KeyringError as err:
            raise ConfigError(f"keyring ({self.description}) failed: {err}") from None
        return True

    def get_json(self, name: str) -> dict[str, Any] | None:
        raw = self.get(name)
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def set_json(self, name: str, value: dict[str, Any]) -> None:
        self.set(name, json.dumps(value, sort_keys=True))


def _mask_in_logs(value: str | None) -> None:
    """Every secret the daemon handles is masked in its logs from then on (bridge.logs)."""
    if not value:
        return
    register_secret(value)
    try:
        parsed = json.loads(value)
    except ValueError:
        return
    if isinstance(parsed, dict):
        for item in parsed.values():
            if isinstance(item, str) and len(item) >= 8:
                register_secret(item)
