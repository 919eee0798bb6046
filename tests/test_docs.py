"""The documentation is held to the code (sqlite-utils' tests/test_docs.py habit).

Every command of the CLI has help text and a heading in docs/reference/; every setting of
the config model is named in docs/reference/settings.md; the README stays a front page;
no relative link in the README or under docs/ points nowhere. The lists of commands and
settings come from the live program, so a new command or setting fails here until it is
documented.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from pydantic import BaseModel

from bridge.cli.main import app
from bridge.config import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
README = ROOT / "README.md"
README_MAX_LINES = 300

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


# --- what the program has --------------------------------------------------------------


def cli_commands() -> dict[str, object]:
    """Every visible command and subcommand, by its path ("auth google"), root excluded."""
    found: dict[str, object] = {}

    def walk(command, path: list[str]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if getattr(sub, "hidden", False):
                continue
            found[" ".join([*path, name])] = sub
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def setting_names(model: BaseModel | None = None, prefix: str = "") -> list[str]:
    """Every leaf setting by its dotted name, nested sections included ("sources.ics.urls").

    Walks a live instance, so sections declared at run time (a registry of sources) count.
    """
    model = Settings() if model is None else model
    names = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            names += setting_names(value, f"{prefix}{name}.")
        else:
            names.append(f"{prefix}{name}")
    return names


# --- what the documentation says -------------------------------------------------------


def without_code_blocks(text: str) -> str:
    return FENCE.sub("", text)


def documented_commands(pages: list[str]) -> set[str]:
    """Commands named in a heading's code span: "## `rhythm-bridge auth google`"."""
    names = set()
    for text in pages:
        for line in without_code_blocks(text).splitlines():
            if not line.startswith("#"):
                continue
            for span in CODE_SPAN.findall(line):
                words = span.split()
                if words and words[0] == "rhythm-bridge":
                    names.add(" ".join(w for w in words[1:] if not w.startswith("-")))
    return names


def documented_settings(text: str) -> set[str]:
    """Dotted setting names in code spans: "`sources.ics.urls`"."""
    return {span.strip() for span in CODE_SPAN.findall(without_code_blocks(text))}


def missing(wanted, documented: set[str]) -> list[str]:
    return [name for name in wanted if name not in documented]


def reference_pages() -> list[str]:
    return [p.read_text() for p in sorted(REFERENCE.glob("*.md"))]


# --- the checks ------------------------------------------------------------------------


def test_the_collectors_find_something():
    assert {"run", "import", "auth google", "push-token create"} <= set(cli_commands())
    names = setting_names()
    assert {"timezone", "sources.ics.urls", "mqtt.base_topic", "runner.options"} <= set(names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("command", sorted(cli_commands()))
def test_every_command_has_help(command):
    cmd = cli_commands()[command]
    assert (cmd.help or cmd.short_help or "").strip(), f"`rhythm-bridge {command}` has no help"


@pytest.mark.parametrize("command", sorted(cli_commands()))
def test_every_command_is_documented(command):
    assert command in documented_commands(reference_pages()), (
        f"`rhythm-bridge {command}` has no heading in docs/reference/cli.md"
    )


@pytest.mark.parametrize("setting", setting_names())
def test_every_setting_is_documented(setting):
    assert setting in documented_settings((REFERENCE / "settings.md").read_text()), (
        f"setting `{setting}` is not in docs/reference/settings.md"
    )


def test_the_detectors_catch_a_missing_name():
    page = "# CLI\n\n## `rhythm-bridge run`\n\n### `rhythm-bridge auth google`\n\n```sh\n# `rhythm-bridge serve` in a code block does not count\n```\n"
    found = documented_commands([page])
    assert found == {"run", "auth google"}
    assert missing(["run", "auth google", "serve"], found) == ["serve"]

    settings_page = "| `timezone` | ... |\n| `sources.ics.paths` | ... |\n"
    found = documented_settings(settings_page)
    assert missing(["timezone", "sources.ics.paths", "sources.ics.urls"], found) == [
        "sources.ics.urls"
    ]


def test_the_readme_is_a_front_page():
    text = README.read_text()
    lines = text.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"
    numbered = re.findall(r"\b(?:rounds?|issues?)\s+#?\d+", text, re.I)
    assert not numbered, f"README.md names work items by number: {numbered}"


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def broken_links(path: Path) -> list[str]:
    text = CODE_SPAN.sub("", without_code_blocks(path.read_text()))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(path):
    assert broken_links(path) == []


def test_the_link_checker_catches_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text(
        "[ok](there.md#a) [web](https://example.invalid) [same](#b) ![img](gone.png)\n"
        "`[not a link](nowhere.md)`\n```\n[neither](nowhere.md)\n```\n[bad](missing.md)\n"
    )
    assert broken_links(page) == ["gone.png", "missing.md"]
