"""Classroom mode in a real browser: Debian's chromium, driven by Playwright, on ``gpu-wizard serve``.

Playwright's own browser download is not available, so the test uses the system ``chromium``
(``.ci/system-deps.sh`` installs it) with a fresh profile. Without it the tests fail under CI and
are skipped, loudly, elsewhere. What the app draws is read from the websocket frames the page
receives (the terminal paints on a canvas), with escape sequences stripped.

``GPU_WIZARD_SCREENSHOTS=DIR`` also writes ``DIR/web.png`` (the README's picture of the wizard in a browser).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.web import ServedWizard, alive
from tests.helpers.browser import Screen

pytestmark = pytest.mark.slow


def open_tab(browser: Any, url: str) -> tuple[Any, Screen]:
    context = browser.new_context(viewport={"width": 1000, "height": 620})
    page = context.new_page()
    screen = Screen(page)
    page.goto(url)
    return context, screen


def test_a_student_walks_connect_nodes_mode_with_the_keyboard_alone_in_a_tab_of_their_own(
    chromium_browser: Any,
) -> None:
    with ServedWizard("--max-sessions", "2", "--spares", "1", "--grace", "2") as served:
        served.wait_for_spares(1)  # the first tab takes a spare started ahead, the second starts cold
        first, screen = open_tab(chromium_browser, served.link)
        screen.wait_for("1/8 Connect")
        assert "F9 Next" in screen.text and "F2 Help" in screen.text  # the browser's keys, in the footer
        at = screen.wait_for("CRDs installed", timeout=60)  # its own demo cluster answered its preflight
        screen.page.locator("textarea.xterm-helper-textarea").focus()
        at = screen.wait_for("Help — Connect", after=screen.press("F2"))
        assert "F9" in screen.text[at:]  # F1 help names the browser's keys too
        screen.press("Escape")
        at = screen.wait_for("2/8 Nodes", after=screen.press("F9"))
        screen.wait_for("gpu-h200-01", after=at)
        at = screen.wait_for("3/8 Mode", after=screen.press("F9"))
        screen.wait_for("F2 compares all three", after=at)
        # the ★ waits for what the hosts run: Nodes' own host check, or the Mode step's button when Nodes was left first
        drawn = screen.text[at:]
        assert "Check hosts for a driver" in drawn or "★ Recommended" in drawn, drawn[-600:]
        if folder := os.environ.get("GPU_WIZARD_SCREENSHOTS"):
            screen.page.wait_for_timeout(500)
            screen.page.screenshot(path=str(Path(folder) / "web.png"))

        # a second student: a Connect of their own, no "resume" of the first student's answers
        second, other = open_tab(chromium_browser, served.link)
        other.wait_for("CRDs installed", timeout=90)  # a cold start, on a machine busy with the whole suite
        assert "Resume where you stopped?" not in other.text
        sessions = served.session_pids()
        assert len(sessions) == 2 and served.status()["sessions"] == 2

        # a third finds the classroom full
        third, full = open_tab(chromium_browser, served.link)
        assert "The classroom is full" in full.page.content()
        third.close()

        # a closed tab's session outlives it for the grace period, then ends; stopping the server ends the rest
        first.close()
        time.sleep(1.0)
        assert served.status()["sessions"] == 2
        deadline = time.monotonic() + 15
        while served.status()["sessions"] != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert served.status()["sessions"] == 1
        sessions += served.session_pids()  # with the spare started in the place it freed
        assert served.stop(signal.SIGINT) == 0
        second.close()
    assert not any(alive(pid) for pid in sessions)


def test_no_token_no_wizard_and_another_sites_page_cannot_open_a_session(chromium_browser: Any) -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0") as served:
        stranger = chromium_browser.new_context()
        page = stranger.new_page()
        response = page.goto(served.url)
        assert response.status == 403 and "Open the link your trainer shared" in page.content()
        stranger.close()

        student = chromium_browser.new_context()
        page = student.new_page()
        page.goto(served.link)  # has the cookie now
        page.goto("about:blank")  # …but this page is not the classroom's
        outcome = page.evaluate(
            """url => new Promise(done => {
                const socket = new WebSocket(url);
                socket.onopen = () => { done("opened"); socket.close(); };
                socket.onclose = () => done("refused");
            })""",
            served.url.replace("http", "ws", 1) + "ws",
        )
        assert outcome == "refused"
        assert len(served.session_pids()) <= 1  # the classroom's own page may have started one
        student.close()
