"""Hostile input for ``gpu-wizard serve`` (classroom mode): every case is refused before a port is opened.

Run by the hostile-input catalogue's runner (see :mod:`tests.helpers.hostile.case`); ``tests/test_web.py`` also runs
them itself.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase

CASES: list[HostileCase] = [
    HostileCase(
        "serve a real cluster",
        ("serve", "--port", "0"),
        2,
        stderr_has=("--demo [SCENARIO] is required", "must never reach a browser"),
    ),
    HostileCase(
        "serve with the trainer's kubeconfig named",
        ("--kubeconfig", "{dir}/kubeconfig", "serve", "--port", "0"),
        2,
        files={"kubeconfig": "apiVersion: v1\nkind: Config\n"},
        stderr_has=("--demo [SCENARIO] is required",),
    ),
    HostileCase("unknown scenario", ("serve", "--demo", "nope"), 2, stderr_has=("unknown scenario 'nope'",)),
    HostileCase(
        "scenario name with a terminal escape",
        ("serve", "--demo", "\x1b[31mred"),
        2,
        stderr_has=("unknown scenario",),
    ),
    HostileCase(
        "scenario file that is not YAML",
        ("serve", "--demo", "{dir}/broken.yaml"),
        2,
        files={"broken.yaml": "nodes: [\n  {name: a\n"},
        stderr_has=("is not valid YAML",),
    ),
    HostileCase("port out of range", ("serve", "--demo", "--port", "70000"), 2, stderr_has=("--port: 70000",)),
    HostileCase("port not a number", ("serve", "--demo", "--port", "http"), 2, stderr_has=("--port",)),
    HostileCase(
        "public URL with a script scheme",
        ("serve", "--demo", "--public-url", "javascript:alert(1)"),
        2,
        stderr_has=("--public-url",),
    ),
    HostileCase(
        "public URL with a query",
        ("serve", "--demo", "--public-url", "https://class.example/?next=//evil.example"),
        2,
        stderr_has=("--public-url", "no query"),
    ),
    HostileCase(
        "every address without a public URL",
        ("serve", "--demo", "--host", "0.0.0.0"),
        2,
        stderr_has=("give --public-url",),
    ),
    HostileCase("no sessions", ("serve", "--demo", "--max-sessions", "0"), 2, stderr_has=("--max-sessions: 0",)),
    HostileCase(
        "a million sessions", ("serve", "--demo", "--max-sessions", "1000000"), 2, stderr_has=("--max-sessions",)
    ),
    HostileCase(
        "more spares than sessions",
        ("serve", "--demo", "--max-sessions", "2", "--spares", "5"),
        2,
        stderr_has=("--spares: 5",),
    ),
    HostileCase("negative grace", ("serve", "--demo", "--grace", "-1"), 2, stderr_has=("--grace: -1",)),
    HostileCase(
        "negative per-client limit",
        ("serve", "--demo", "--max-per-client", "-2"),
        2,
        stderr_has=("--max-per-client: -2",),
    ),
    HostileCase(
        "scenario list naming an unknown one",
        ("serve", "--demo", "--scenarios", "large,nope"),
        2,
        stderr_has=("--scenarios: 'nope'",),
    ),
]
