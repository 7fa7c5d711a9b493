"""Classroom mode without a browser: the real ``gpu-wizard serve`` process and websocket clients.

Each tab is what ``benchmarks/web.py`` uses: the token link for the cookie, then ``/ws`` with an
Origin, speaking the browser terminal's messages. Checked here: a real cluster is refused, the token,
the cookie and the Origin check, the session cap, what a session's process sees (environment,
folders), and that no app outlives its tab, a stopped server or a killed one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.web import FIRST_FRAME, PREFLIGHT_DONE, ServedWizard, Tab, alive
from tests.helpers.hostile.case import HostileCase
from tests.helpers.hostile.cases_web import CASES as HOSTILE_CASES
from tests.helpers.web import wait_until
from wizard.web.environment import remove_stale_roots, session_environment
from wizard.web.server import origin_of

SECRETS = {
    "KUBECONFIG": "/trainer/.kube/config",
    "AWS_SECRET_ACCESS_KEY": "trainer-secret",
    "REGISTRY_AUTH_FILE": "/trainer/auth.json",
    "DOCKER_CONFIG": "/trainer/.docker",
    "HTTPS_PROXY": "http://user:password@proxy.example:3128",
}


def session_folder(pid: int) -> Path:
    """The folder of session process ``pid`` (its HOME is ``<root>/session-…/home``)."""
    environ = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    return Path(environ["HOME"]).parent


@pytest.fixture(scope="module")
def served() -> Iterator[ServedWizard]:
    """One server with room for two sessions started cold, ended with their tabs, and the trainer's secrets in its environment."""
    limits = ("--max-sessions", "2", "--spares", "0", "--grace", "0")
    with ServedWizard(*limits, env={**os.environ, **SECRETS}) as server:
        yield server


def test_serve_refuses_a_real_cluster() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wizard", "serve", "--port", "0"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert "--demo [SCENARIO] is required" in done.stderr and "Traceback" not in done.stderr


async def test_the_link_sets_a_private_cookie_and_nothing_opens_without_it(served: ServedWizard) -> None:
    import aiohttp

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(served.url) as page:
            assert page.status == 403 and "Open the link your trainer shared" in await page.text()
        async with http.get(served.url + "?token=guessed") as page:
            assert page.status == 403
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(served.url.replace("http", "ws", 1) + "ws", origin=served.origin)
        assert refused.value.status == 403


async def test_websocket_needs_the_cookie_and_this_servers_origin(served: ServedWizard) -> None:
    no_cookie = Tab(served)
    await no_cookie.open(token="guessed")
    assert (no_cookie.page_status, no_cookie.status) == (403, 403)
    await no_cookie.close()
    for foreign in ("http://evil.example", "null", "http://127.0.0.1:1"):
        tab = Tab(served)
        await tab.open(origin=foreign)
        assert tab.page_status == 200 and tab.status == 403, foreign
        await tab.close()
    assert served.session_pids() == []


def test_the_cookie_is_httponly_and_the_token_leaves_the_address_bar(served: ServedWizard) -> None:
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(served.link, timeout=10)
    assert answer.value.code == 303 and answer.value.headers["Location"] == "/"
    cookie = answer.value.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    assert answer.value.headers["Referrer-Policy"] == "no-referrer"


async def test_two_sessions_are_isolated_and_a_third_finds_the_classroom_full(served: ServedWizard) -> None:
    first, second = Tab(served), Tab(served)
    await asyncio.gather(first.open(), second.open())
    try:
        await asyncio.gather(first.read_until(FIRST_FRAME, 30), second.read_until(FIRST_FRAME, 30))
        pids = served.session_pids()
        assert len(pids) == 2
        homes = set()
        for pid in pids:
            environ = Path(f"/proc/{pid}/environ").read_text().split("\0")
            names = {item.split("=", 1)[0] for item in environ if item}
            assert not names & set(SECRETS), f"session {pid} sees {names & set(SECRETS)}"
            offered = next(item for item in environ if item.startswith("GPU_WIZARD_DEMO_SCENARIOS="))
            assert "preinstalled" in offered and "large" not in offered.split("=", 1)[1].split(",")
            home = next(item.split("=", 1)[1] for item in environ if item.startswith("HOME="))
            homes.add(home)
            assert f"GPU_WIZARD_SEALED={home}" in environ  # its launcher seals it to its folder (wizard/sealed.py)
            folder = Path(home).parent
            assert os.readlink(f"/proc/{pid}/cwd") == home
            assert folder.stat().st_mode & 0o077 == 0
            assert os.getpgid(pid) == pid  # its own process group
        assert len(homes) == 2

        third = Tab(served)
        await third.open()
        assert third.page_status == 503 and "The classroom is full" in third.page_text
        assert await third.close_code() == 4503  # the page's own notice says so too
        await third.close()

        folders = {pid: session_folder(pid) for pid in pids}
        await first.close()  # the tab closes: its app ends and its folder goes
        assert await asyncio.to_thread(wait_until, lambda: len(served.session_pids()) == 1, 10)
        (survivor,) = served.session_pids()
        (gone,) = set(pids) - {survivor}
        assert not alive(gone)
        assert await asyncio.to_thread(wait_until, lambda: not folders[gone].exists(), 5)
        assert folders[survivor].is_dir()
    finally:
        await first.close()
        await second.close()


def _start_one_session(served: ServedWizard) -> tuple[int, Path]:
    async def run() -> Tab:
        tab = Tab(served)
        await tab.open()
        await tab.read_until(FIRST_FRAME, 30)
        return tab

    loop = asyncio.new_event_loop()
    tab = loop.run_until_complete(run())
    pid = served.session_pids()[0]
    root = session_folder(pid).parent
    served._keep = (loop, tab)  # type: ignore[attr-defined]  # the tab stays open until the server goes
    return pid, root


def _forget_tab(served: ServedWizard) -> None:
    loop, tab = served._keep  # type: ignore[attr-defined]
    loop.run_until_complete(tab.close())
    loop.close()


def test_stopping_the_server_ends_every_session_and_spare_and_removes_their_folders() -> None:
    with ServedWizard("--max-sessions", "2", "--spares", "1") as served:
        _start_one_session(served)
        pids = served.session_pids()  # the tab's session, and a spare started ahead (or starting)
        root = session_folder(pids[0]).parent
        assert served.stop(signal.SIGINT) == 0
        _forget_tab(served)
    assert not any(alive(pid) for pid in pids)
    assert not root.exists()


async def test_a_spare_started_ahead_opens_at_once_and_is_given_to_one_tab_only() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "1") as served:
        await asyncio.to_thread(served.wait_for_spares, 1)
        (spare,) = served.session_pids()
        tab = Tab(served)
        await tab.open()
        assert await tab.read_until(PREFLIGHT_DONE, 10) < 3.0  # drawn before the tab came: sent at once
        assert served.session_pids() == [spare]
        assert served.status() == {"sessions": 1, "ready": 0, "warming": 0, "limit": 1}  # full: no new spare
        late = Tab(served)
        await late.open()
        assert await late.close_code() == 4503
        await late.close()
        await tab.close()


def test_a_killed_server_leaves_no_app_running_and_the_next_start_removes_its_folders(tmp_path: Path) -> None:
    # A private TMPDIR: another test's server, starting meanwhile in another worker, sweeps the shared
    # temporary folder for dead servers' roots and would remove this one before it is looked at.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with ServedWizard("--max-sessions", "1", "--spares", "0", env=env) as served:
        pid, root = _start_one_session(served)
        served.stop(signal.SIGKILL)
        _forget_tab(served)
        assert wait_until(lambda: not alive(pid), 10), "the app outlived its killed server"
    assert root.parent == tmp_path and root.is_dir()  # nobody was left to remove it…
    assert root in remove_stale_roots(root.parent)  # …until the next server starts
    assert not root.exists()


def test_a_sessions_environment_is_built_from_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    env = session_environment(tmp_path, width=100, height=30)
    assert not set(env) & set(SECRETS)
    assert env["HOME"] == str(tmp_path / "home") and env["XDG_CONFIG_HOME"] == str(tmp_path / "home" / ".config")
    assert env["GPU_WIZARD_SESSION_FOLDER"] == env["HOME"]
    assert env["TEXTUAL_DRIVER"] == "screens.webdriver:ClassroomWebDriver"
    assert (env["COLUMNS"], env["ROWS"]) == ("100", "30")


def test_origin_is_written_the_way_browsers_send_it() -> None:
    assert origin_of("https://class.example.com/wizard/") == "https://class.example.com"
    assert origin_of("https://class.example.com:443/") == "https://class.example.com"
    assert origin_of("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert origin_of("http://[::1]:8000/") == "http://[::1]:8000"


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=[case.name for case in HOSTILE_CASES])
def test_hostile_serve_options_are_refused_with_one_line(case: HostileCase, tmp_path: Path) -> None:
    for name, content in case.files.items():
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(tmp_path / name, mode) as handle:
            handle.write(content)
    argv = [arg.replace("{dir}", str(tmp_path)) for arg in case.argv]
    done = subprocess.run(
        [sys.executable, "-m", "wizard", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **case.env},
    )
    assert done.returncode == case.expect_exit, done.stderr
    for text in case.stderr_has:
        assert text in done.stderr
    assert "Traceback" not in done.stderr
    assert not any(ord(c) < 32 and c not in "\n\t" for c in done.stdout + done.stderr)


def test_in_a_browser_every_global_action_has_a_key_the_browser_leaves_alone() -> None:
    from screens.keys import BROWSER_KEPT, GLOBAL_KEYS, footer_hints, help_keys

    for key in GLOBAL_KEYS:
        assert key.browser not in BROWSER_KEPT, key
        if key.browser != key.terminal:  # an alternate: F1 help in a browser names it
            assert f"`{key.browser_shown}`" in help_keys(web=True), key
    assert [label for _, label in footer_hints(web=True)] == [label for _, label in footer_hints(web=False)]


def test_a_classroom_session_saves_files_only_in_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from screens.dialogs.dialogs import SESSION_FOLDER_VARIABLE, inside_session_folder

    session = tmp_path / "session"
    (session / "home").mkdir(parents=True)
    (session / "home" / "escape").symlink_to(tmp_path)
    assert inside_session_folder(Path("/etc/cron.d/x"))  # outside classroom mode: the user's own machine
    monkeypatch.setenv(SESSION_FOLDER_VARIABLE, str(session))
    assert inside_session_folder(session / "home" / "answers.yaml")
    assert not inside_session_folder(Path("/etc/cron.d/x"))
    assert not inside_session_folder(session / "home" / "escape" / "x")  # a symlink out is still out
    assert not inside_session_folder(session / ".." / "x")


def test_behind_a_tls_proxy_the_page_uses_wss_a_secure_cookie_and_only_the_public_origin(tmp_path: Path) -> None:
    from wizard.web.pool import SessionPool
    from wizard.web.server import Classroom

    pool = SessionPool(["true"], 1, tmp_path)
    behind_proxy = Classroom(pool, "t", "https://class.example.com/wizard", loopback_aliases=False)
    assert behind_proxy.websocket_url == "wss://class.example.com/wizard/ws"
    assert behind_proxy.secure and behind_proxy.origins == {"https://class.example.com"}
    local = Classroom(pool, "t", "http://127.0.0.1:8000/", loopback_aliases=True)
    assert local.websocket_url == "ws://127.0.0.1:8000/ws" and not local.secure
    assert "http://localhost:8000" in local.origins and "https://class.example.com" not in local.origins


def test_the_default_session_cap_follows_cores_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    from wizard.cli import serve

    monkeypatch.setattr(serve.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(serve, "available_memory", lambda: 64 * 2**30)
    assert serve.default_max_sessions() == 20  # 10 per core
    monkeypatch.setattr(serve, "available_memory", lambda: 1 * 2**30)
    assert serve.default_max_sessions() == 3  # 300 MB each
    monkeypatch.setattr(serve, "available_memory", lambda: 0)
    assert serve.default_max_sessions() == 1
