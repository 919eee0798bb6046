"""A real browser against the served page: Debian's chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from bridge.store.models import Feedback, Recommendation
from bridge.web.server import BackgroundServer
from bridge.web.words import readable
from mappings.actions import action_name
from tests.conftest import DEMO_NOW

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ROOT = Path(__file__).parents[2]
# Screenshots land here (CI can keep the folder); UPDATE_SCREENSHOT=1 refreshes
# docs/screenshot.png (the page) and docs/screenshot-answered.png (its card once answered).
ARTIFACTS = Path(os.environ.get("RHYTHM_BRIDGE_ARTIFACTS", ROOT / ".artifacts"))


@pytest.fixture
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing; .ci/run installs it with apt-get")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def test_load_the_page_accept_and_find_it_in_the_database(demo, memory_keyring, browser):
    settings, store = demo
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with BackgroundServer(settings, store, host="127.0.0.1", port=0, clock=lambda: DEMO_NOW) as web:
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.goto(web.url + "/")
        assert page.locator("li.meter").count() == 5
        assert page.locator("svg.trend polyline").count() >= 5
        with store.session() as sess:
            action, rationale = sess.execute(
                select(Recommendation.action, Recommendation.rationale)
            ).one()
        assert page.get_by_test_id("rec-action").inner_text() == action_name(action)
        assert page.locator(".rationale").inner_text() == readable(rationale)
        # The free window of the demo calendar: from now to the stand-up.
        assert page.get_by_test_id("rec-window").inner_text() == "free 08:40–09:30"
        page.screenshot(path=str(ARTIFACTS / "page.png"), full_page=True)
        if os.environ.get("UPDATE_SCREENSHOT"):
            (ROOT / "docs").mkdir(exist_ok=True)
            shutil.copy(ARTIFACTS / "page.png", ROOT / "docs" / "screenshot.png")

        page.get_by_role("button", name="Accept").click()
        answer = page.get_by_test_id("rec-answer")
        answer.wait_for(state="visible")
        assert answer.inner_text() == "Answered: accepted via web"
        page.screenshot(path=str(ARTIFACTS / "page-accepted.png"), full_page=True)

        page.reload()  # the server now shows the stored answer, not the buttons
        assert "accepted via web" in page.get_by_test_id("rec-answer").inner_text()
        assert page.get_by_role("button", name="Accept").count() == 0
        assert "no answers yet" not in page.locator(".rationale").inner_text()
        page.locator("#recommendation").screenshot(path=str(ARTIFACTS / "page-answered.png"))
        if os.environ.get("UPDATE_SCREENSHOT"):
            shutil.copy(ARTIFACTS / "page-answered.png", ROOT / "docs" / "screenshot-answered.png")
        page.close()
    assert not web.thread.is_alive()
    with store.session() as s:
        rows = s.execute(select(Feedback)).scalars().all()
    assert [(f.response, f.channel) for f in rows] == [("accepted", "web")]


def test_keyboard_and_dark_mode(demo, memory_keyring, browser):
    settings, store = demo
    with BackgroundServer(settings, store, host="127.0.0.1", port=0, clock=lambda: DEMO_NOW) as web:
        ctx = browser.new_context(color_scheme="dark", viewport={"width": 390, "height": 844})
        page = ctx.new_page()
        page.goto(web.url + "/")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(15, 17, 21)"  # the dark palette, not white
        # narrow screens stack the three answer buttons
        boxes = [page.get_by_role("button", name=n).bounding_box() for n in ("Accept", "Ignore")]
        assert boxes[1]["y"] > boxes[0]["y"]
        page.keyboard.press("r")  # answer from the keyboard
        page.get_by_test_id("rec-answer").wait_for(state="visible")
        assert "rescheduled" in page.get_by_test_id("rec-answer").inner_text()
        ctx.close()
    with store.session() as s:
        assert s.execute(select(Feedback.response)).scalars().all() == ["rescheduled"]
