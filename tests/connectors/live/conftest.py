"""Fixtures of the live-source tests: a throwaway encrypted keyring, no real waiting."""

from __future__ import annotations

from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from bridge.auth.secrets import KEY_ENV, EncryptedFileKeyring, Secrets
from bridge.config import Settings

TEST_KEY = "test-only-keyring-key"


@pytest.fixture(autouse=True)
def _no_real_keyring_no_waiting(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    # The machine's keyring is never touched: "auto" falls through to the encrypted file.
    monkeypatch.setattr(keyring.core, "_keyring_backend", fail.Keyring())
    monkeypatch.setenv(KEY_ENV, TEST_KEY)
    waits: list[float] = []
    monkeypatch.setattr("connectors.http.sleep", waits.append)
    return waits


@pytest.fixture
def live_settings(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {
            "timezone": "Europe/Berlin",
            "data_dir": str(tmp_path / "data"),
            "sources": {
                "whoop": {"enabled": True, "client_id": "whoop-client-id"},
                "google_calendar": {"enabled": True, "calendars": ["primary", "team@example.com"]},
                "garmin": {"enabled": True},
            },
        }
    )


@pytest.fixture
def secrets(live_settings: Settings) -> Secrets:
    s = Secrets.from_settings(live_settings)
    assert isinstance(s.backend, EncryptedFileKeyring)
    return s
