"""Small helpers shared by the CLI, pipeline and daemon tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from keyring.backend import KeyringBackend

SCHEMA_PATH = Path(__file__).parent.parent / "bridge" / "schemas" / "snapshot.schema.json"


def validate_snapshot(doc: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)


def write_config(path: Path, data_dir: Path, **sections: str) -> Path:
    """A config file for a store in data_dir; extra TOML sections by name."""
    text = f'timezone = "Europe/Berlin"\ndata_dir = "{data_dir}"\n'
    for body in sections.values():
        text += body + "\n"
    path.write_text(text)
    return path


class MemoryKeyring(KeyringBackend):
    """An in-memory keyring backend so no test touches the machine's real keyring."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        from keyring.errors import PasswordDeleteError

        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError(username)
