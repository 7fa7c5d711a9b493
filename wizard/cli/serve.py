"""``gpu-wizard serve --demo [SCENARIO]``: classroom mode, the wizard in browsers with a demo cluster per tab.

Only the demo cluster is ever served: a browser session of a real cluster would hand the server's
kubeconfig and registry credentials to whoever opens the link, so ``serve`` without ``--demo`` is
refused (exit 2). The server itself is :mod:`wizard.web`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from wizard.bundled import DEFAULT_DEMO_SCENARIO
from wizard.cli.common import EXIT_OK, UsageError

SESSIONS_PER_CORE = 10
"""Students starting together per core before start-up gets slow (docs/benchmarks.md, classroom mode)."""
SPARES_PER_CORE = 5
"""Sessions kept started ahead per core: 10 on 2 cores, the class that arrives together in the benchmark."""
MAX_DEFAULT_SPARES = 30
"""A big server does not keep hundreds of idle wizards by default: a class rarely has more students."""
MEMORY_PER_SESSION = 300 * 1024 * 1024
"""Bytes of memory kept free per session (one measures about 150 MB; the rest is headroom)."""
DEFAULT_GRACE_S = 300
"""Seconds a session outlives its closed tab, so a reload or a reopened link finds it again."""
DEFAULT_PER_CLIENT = 3
"""Sessions one client address may hold by default (a laptop, a phone, a second try)."""
HEAVY_SCENARIOS = ("large",)
"""Bundled scenarios not offered to students unless ``--scenarios`` names them: ``large`` takes
~530 MiB and ~85 CPU-s a session, far past the 300 MB a session the cap assumes."""


def available_memory() -> int | None:
    """Bytes of memory available to new processes (Linux ``MemAvailable``: free plus reclaimable cache)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def default_max_sessions() -> int:
    """Sessions this machine can hold: 10 per core, and no more than the available memory allows."""
    cores = os.cpu_count() or 1
    by_cores = cores * SESSIONS_PER_CORE
    available = available_memory()
    by_memory = by_cores if available is None else available // MEMORY_PER_SESSION
    return max(1, min(by_cores, by_memory))


def register(sub: Any) -> None:
    """Add ``serve`` to the subcommand parsers."""
    serve = sub.add_parser(
        "serve",
        help="classroom mode: the wizard in browsers, one demo cluster per session",
        description="Serve the wizard to browsers; each tab gets its own SIMULATED demo cluster. "
        "Prints the link to share (it carries this start's token).",
    )
    serve.add_argument(
        "--demo",
        dest="serve_demo",
        nargs="?",
        const=DEFAULT_DEMO_SCENARIO,
        metavar="SCENARIO",
        help=f"the demo scenario every session starts on (required; default {DEFAULT_DEMO_SCENARIO})",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000; 0 picks a free one)")
    serve.add_argument(
        "--public-url",
        metavar="URL",
        help="the address students open when a reverse proxy is in front (https://… for TLS)",
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        metavar="N",
        help=f"sessions at once (default from this machine's cores and memory: {default_max_sessions()})",
    )
    serve.add_argument(
        "--spares",
        type=int,
        metavar="N",
        help="sessions started ahead, so a tab opens on a ready wizard (default: 5 per core, at most 30 "
        "and never more than --max-sessions; 0: start each session when its tab opens)",
    )
    serve.add_argument(
        "--grace",
        type=int,
        metavar="SECONDS",
        default=DEFAULT_GRACE_S,
        help=f"how long a session outlives its closed or reloaded tab; the same browser reattaches to it "
        f"(default {DEFAULT_GRACE_S}; 0: end it with its tab, a few seconds later so that a reload finds it)",
    )
    serve.add_argument(
        "--max-per-client",
        type=int,
        metavar="N",
        default=DEFAULT_PER_CLIENT,
        help=f"sessions one client address may hold, and new ones it may open a minute (default "
        f"{DEFAULT_PER_CLIENT}; 0: no limit, e.g. a class behind one NAT address)",
    )
    serve.add_argument(
        "--scenarios",
        metavar="LIST",
        help="comma-separated demo scenarios students may switch to, or 'all' (default: every bundled "
        f"one but {', '.join(HEAVY_SCENARIOS)}; the --demo scenario is always offered)",
    )
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Check the options, then serve until Ctrl-C."""
    scenario = args.serve_demo or getattr(args, "demo", None)
    if scenario is None:
        raise UsageError(
            "serve: --demo [SCENARIO] is required: classroom mode serves only the built-in demo cluster "
            "(a real cluster's kubeconfig and registry credentials must never reach a browser)"
        )
    scenario = _checked_scenario(scenario)
    options = _options(args, scenario)
    from wizard.web.server import ServeError, serve

    logging.basicConfig(level=logging.WARNING, format="gpu-wizard serve: %(message)s", stream=sys.stderr)

    def announce(url: str, status_url: str, local_url: str) -> None:
        proxy = (
            f"  listening: {local_url}  (point your reverse proxy here; students open the link below)\n"
            if options.public_url
            else ""
        )
        sys.stdout.write(
            "gpu-wizard classroom: every browser tab gets its own SIMULATED demo cluster "
            f"(scenario {Path(scenario).name}), sealed: no network but its own cluster, no programs, no "
            "files but its own folder.\n"
            f"{proxy}"
            f"  status:    {status_url}  (for you only)\n"
            f"  open:      {url}\n"
            f"  sessions:  at most {options.max_sessions} at once, {options.per_client or 'any number'} per "
            f"client address; {options.spares} started ahead (the link works at once); a closed tab's "
            f"session is kept {options.grace:g} s\n"
            "Share the link only with your students: its token is the key. Ctrl-C stops the server and every session.\n"
        )
        sys.stdout.flush()

    def ready(spares: int, seconds: float) -> None:
        started = f"{spares} session(s) started ahead in {seconds:.1f} s" if options.spares else "no spares asked for"
        sys.stdout.write(f"ready: {started}; the class can start.\n")
        sys.stdout.flush()

    try:
        asyncio.run(serve(options, announce, ready))
    except ServeError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def _checked_scenario(scenario: str) -> str:
    """The scenario by bundled name, or as an absolute path (sessions run in their own folder)."""
    from wizard.demo.scenarios.scenario import ScenarioError, load_scenario

    try:
        load_scenario(scenario)
    except ScenarioError as exc:
        raise UsageError(f"--demo: {exc}") from None
    path = Path(scenario).expanduser()
    return str(path.resolve()) if path.is_file() else scenario


def _options(args: argparse.Namespace, scenario: str) -> Any:
    from wizard.web.server import ServeOptions, is_loopback

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port: {args.port} is not a port (0-65535; 0 picks a free one)")
    limit = args.max_sessions if args.max_sessions is not None else default_max_sessions()
    if not 1 <= limit <= 1000:
        raise UsageError(f"--max-sessions: {limit} is out of range (1-1000)")
    default_spares = min(limit, SPARES_PER_CORE * (os.cpu_count() or 1), MAX_DEFAULT_SPARES)
    spares = args.spares if args.spares is not None else default_spares
    if not 0 <= spares <= limit:
        raise UsageError(f"--spares: {spares} is out of range (0 to --max-sessions, {limit})")
    if not 0 <= args.grace <= 86400:
        raise UsageError(f"--grace: {args.grace} is out of range (0-86400 seconds)")
    if not 0 <= args.max_per_client <= 1000:
        raise UsageError(f"--max-per-client: {args.max_per_client} is out of range (0-1000; 0: no limit)")
    public_url = args.public_url
    if public_url is not None:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise UsageError(
                f"--public-url: {public_url!r} is not a page address (give http(s)://host[:port][/path], "
                "no query or fragment)"
            )
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            sys.stderr.write(
                f"gpu-wizard serve: warning: {public_url} is plain HTTP: the link's token and every keystroke "
                "cross the network unencrypted; put a TLS reverse proxy in front (README, classroom mode) and "
                "pass --public-url https://…\n"
            )
    elif args.host in ("0.0.0.0", "::", "[::]", ""):
        raise UsageError(
            f"--host {args.host!r} listens on every address: give --public-url too (the address students open)"
        )
    elif not is_loopback(args.host):
        sys.stderr.write(
            f"gpu-wizard serve: warning: {args.host} is reached over plain HTTP: the link's token travels "
            "unencrypted; put a TLS reverse proxy in front (README, classroom mode) and pass --public-url https://…\n"
        )
    return ServeOptions(
        scenario=scenario,
        host=args.host,
        port=args.port,
        public_url=public_url,
        max_sessions=int(limit),
        spares=int(spares),
        grace=float(args.grace),
        per_client=int(args.max_per_client),
        scenarios=_offered_scenarios(args.scenarios),
    )


def _offered_scenarios(given: str | None) -> tuple[str, ...]:
    """The scenarios students may switch to: ``--scenarios``, else every bundled one but the heavy ones."""
    from wizard.demo.scenarios.scenario import scenario_names

    names = scenario_names()
    if given is None:
        return tuple(name for name in names if name not in HEAVY_SCENARIOS)
    if given.strip() == "all":
        return tuple(names)
    wanted = [name.strip() for name in given.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in names]
    if unknown or not wanted:
        raise UsageError(
            f"--scenarios: {', '.join(map(repr, unknown)) or 'nothing'} is not a bundled scenario "
            f"(give 'all' or names from: {', '.join(names)})"
        )
    return tuple(wanted)
