"""One cache per session (issue 38): a whole TUI walk lists each kind once and watches it once.

The walk is the newcomer's whole path on the demo (real HTTPS, nothing mocked): Connect, Nodes (its node table
follows the cluster by watch), Mode, Driver (the registry check), Paths (the host probe), Preview (the dry-run),
Apply, the rollout, Verify. Every API request the wizard sends is counted where the product itself writes it
down, its request log (:mod:`wizard.requestlog`, ``GPU_WIZARD_LOG``: one line per request, as kubectl's
``-v=6``), so the count is what went over the wire.

The rule asserted, per list or watch *key* (resource path, namespace, label and field selector; a continued page
is the same list):

* the **nodes** (every node: discovery, the Nodes step's watch, the host checks, the apply's gate, the rollout,
  Verify) are **listed once and watched once** (one request each: the session's node cache; before it, a walk
  listed them 5 times and watched them twice);
* **no key is watched twice**: each watch is one of the session's caches or a run's own (a host probe run's pods);
* a key is **listed once**, but for the fresh reads a verdict takes on purpose, which :data:`FRESH` counts: the
  ClusterPolicy (preflight on Connect, the apply's diff, the rollout's ``ready`` confirmed on fresh lists twice
  since watches of two kinds are not ordered, Verify's judgement) and the DaemonSets (the apply's leftovers, that
  confirmation twice). Before the session's cache the ClusterPolicy alone was listed 16 times.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from tests.helpers.tui import apply_and_roll_out, connected, demo_app, next_to, set_field, verified
from tests.snapshots.plugin import screen_text, wait_for
from wizard import requestlog

pytestmark = pytest.mark.slow

LINE = re.compile(r"^\S+ api (?P<method>[A-Z]+) (?P<url>\S+) ")
UNANSWERED = re.compile(r"^\S+ api WATCH \S+\?watch=(?P<what>\S+) ")
WHAT = re.compile(r"^watching (?P<kind>\S+)(?: in (?P<ns>\S+))?(?: -l (?P<sel>\S+))?$")
"""A watch stopped before the server's first answer (the request log says what it watched, not its URL)."""


def request_keys(log: str) -> tuple[Counter[tuple[str, ...]], Counter[tuple[str, ...]]]:
    """Lists (first pages only: a continued page is the same list) and watches, by key."""
    lists: Counter[tuple[str, ...]] = Counter()
    watches: Counter[tuple[str, ...]] = Counter()
    for line in log.splitlines():
        said = UNANSWERED.match(line)
        unanswered = WHAT.match(unquote(said["what"])) if said is not None else None
        if said is not None:
            assert unanswered is not None, line
            kind = unanswered["kind"].rsplit(".", 1)[0] if "." in unanswered["kind"] else unanswered["kind"]
            watches[(kind, unanswered["ns"] or "", unanswered["sel"] or "", "")] += 1
            continue
        found = LINE.match(line)
        if found is None:
            continue
        url = urlsplit(found["url"])
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        parts = parts[2:] if parts[0] == "api" else parts[3:]  # /api/v1/…, /apis/GROUP/VERSION/…
        namespace = ""
        if len(parts) >= 3 and parts[0] == "namespaces":
            namespace, parts = parts[1], parts[2:]
        if len(parts) != 1:
            continue  # one object (or its log, its exec): no list
        key = (parts[0], namespace, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        if found["method"] == "WATCH" or query.get("watch") in ("true", "1"):
            watches[key] += 1
        elif found["method"] == "GET" and "continue" not in query:
            lists[key] += 1
    return lists, watches


FRESH = {"clusterpolicies": 5, "daemonsets": 3}
"""Lists a kind takes besides its one cache list: the verdicts' fresh reads (see the module docstring)."""


async def test_a_whole_walk_lists_each_kind_once_and_watches_it_once(
    tui_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "requests.log"
    monkeypatch.setenv(requestlog.ENV, str(log))
    requestlog.configure()
    try:
        app = demo_app(tui_env, "sle-micro-precompiled")
        async with app.run_test(size=(80, 24)) as pilot:
            await connected(pilot)
            await next_to(pilot, "nodes")
            await wait_for(pilot, lambda: "gpu-h200-02" in screen_text(app), what="the node table")
            await next_to(pilot, "mode")
            await next_to(pilot, "driver")
            await set_field(pilot, "driver-repository", "registry.example.com/mlops")
            await wait_for(pilot, lambda: bool(app.state.images), what="the registry check")
            await next_to(pilot, "paths")
            await next_to(pilot, "preview")
            await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
            await next_to(pilot, "apply")
            await apply_and_roll_out(pilot)
            assert "✓ verified: 2 GPU node(s)" in await verified(pilot)
    finally:
        requestlog.close()
    lists, watches = request_keys(log.read_text())
    every_node = ("nodes", "", "", "")
    assert (lists[every_node], watches[every_node]) == (1, 1), (lists, watches)
    assert [key for key, n in watches.items() if n > 1] == [], watches
    assert [key for key, n in lists.items() if n > 1 + FRESH.get(key[0], 0)] == [], lists
