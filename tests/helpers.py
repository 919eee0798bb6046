"""Small helpers shared by the CLI, pipeline and daemon tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

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
