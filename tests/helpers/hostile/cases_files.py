"""Hostile input files for every reader (issue 28): NodeLists, scenarios, kubeconfigs and backups.

Each goes through the one bounded reader (``wizard/bounded_read.py``): a device that never ends, a
FIFO no one writes to, a sparse file past the size limit, nesting far past the depth limit (the
100,000-deep NodeList ended in a ``RecursionError`` traceback; ``--nodes /dev/zero`` never
returned), aliases, numbers and strings past their limits. Each is refused in one line naming the
file and the limit, exit 2. A NodeList that lists a node twice renders once, with a warning naming it.
"""

from __future__ import annotations

import json

from tests.helpers.hostile.case import FIFO, HostileCase, Special
from tests.helpers.hostile.cases_nodes import UPSTREAM_AIRGAPPED, node

DEEP_JSON = '{"items": ' + "[" * 100_000 + "]" * 100_000 + "}"
"""200 KB, 100,000 levels: the issue's NodeList."""
DEEP_BLOCK_YAML = "items:\n" + "".join("  " * i + "-\n" for i in range(1, 400))
"""400 block-sequence levels, one per line."""
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)
NODELIST_DEPTH = "nested deeper than 32 levels"


def _nodes(name: str, nodes: str | bytes | Special, *expected: str, exit_code: int = 2) -> HostileCase:
    """``render --nodes`` with this NodeList (``nodes.json``, or a path when ``nodes`` is an absolute path)."""
    target = nodes if isinstance(nodes, str) and nodes.startswith(("/dev/", "{dir}")) else "{dir}/nodes.json"
    files: dict[str, str | bytes | Special] = {"answers.yaml": UPSTREAM_AIRGAPPED}
    if target == "{dir}/nodes.json":
        files["nodes.json"] = nodes
    argv = ("render", "--answers", "{dir}/answers.yaml", "--nodes", target, "-o", "images")
    return HostileCase(f"nodelist: {name}", argv, exit_code, files=files, stderr_has=expected)


def _scenario(
    name: str, text: str | Special, *expected: str, extra: dict[str, str | Special] | None = None
) -> HostileCase:
    files: dict[str, str | bytes | Special] = {"s.yaml": text, **(extra or {})}
    # `gpu-wizard --demo FILE` reads the scenario before the TUI loads (0.1 s of CPU, `discover` 0.9 s): a
    # FIFO's 1 s deadline then stays far from the catalogue's 2 s
    return HostileCase(f"scenario: {name}", ("--demo", "{dir}/s.yaml"), 2, files=files, stderr_has=expected)


def _kubeconfig(name: str, text: str | Special, *expected: str) -> HostileCase:
    argv = ("discover", "--kubeconfig", "{dir}/kubeconfig")
    return HostileCase(f"kubeconfig: {name}", argv, 2, files={"kubeconfig": text}, stderr_has=expected)


_KUBECONFIG_HEAD = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"

CASES: list[HostileCase] = [
    _nodes("JSON nested 100,000 deep (200 KB)", DEEP_JSON, "nodes.json: " + NODELIST_DEPTH),
    _nodes("JSON nested 40 deep", '{"items": [' + "[" * 40 + "]" * 40 + "]}", "nodes.json: items[0]", NODELIST_DEPTH),
    _nodes("YAML nested 400 deep in blocks", DEEP_BLOCK_YAML, "nodes.json:", NODELIST_DEPTH),
    _nodes("YAML nested 100,000 deep on one line", "items: " + "[" * 100_000 + "]" * 100_000 + "\n", NODELIST_DEPTH),
    _nodes("/dev/zero", "/dev/zero", "/dev/zero: cannot read the file: not text (a NUL byte at byte 0)"),
    _nodes("/dev/urandom", "/dev/urandom", "/dev/urandom: cannot read the file:"),
    _nodes("a FIFO no one writes to", FIFO, "nodes.json: nothing to read after 1 s", "save the content to a file"),
    _nodes(
        "a sparse file of 300 MB",
        Special("sparse", 300 << 20),
        "nodes.json: more than 268,435,456 bytes; a NodeList may hold at most 268,435,456 bytes (256 MiB)",
    ),
    _nodes("a folder", "{dir}", "is a folder; give a NodeList"),
    _nodes(
        "an integer of 5,000 digits",
        json.dumps({"items": [node()]})[:-1] + ', "x": ' + "9" * 5000 + "}",
        "nodes.json: a number of more than 32 digits",
    ),
    _nodes(
        "an annotation of 1 MB",
        json.dumps({"items": [{**node(), "metadata": {"name": "gpu-0", "annotations": {"a": "x" * (1 << 20)}}}]}),
        "nodes.json: items[0].metadata.annotations.a: a value of 1,048,576 characters",
    ),
    _nodes("YAML aliases (billion laughs)", LAUGHS, "nodes.json:1: a: anchors and aliases"),
    _nodes("not UTF-8", b"\xff\xfe{\x00", "nodes.json: cannot read the file: not UTF-8 text (byte 0)"),
    _nodes(
        "one node listed twice",
        json.dumps({"items": [node("gpu-0"), node("gpu-1"), node("gpu-0")]}),
        "gpu-wizard: warning:",
        "nodes.json: a node is listed more than once: gpu-0 (2×); the last entry of each is used",
        exit_code=0,
    ),
    _scenario("nested 2,000 deep on one line", "name: x\nnodes: " + "[" * 2000 + "]" * 2000 + "\n", "deeper than 16"),
    _scenario("aliases (billion laughs)", LAUGHS, "s.yaml' line 1 cannot be used: a: anchors and aliases"),
    _scenario("a FIFO no one writes to", FIFO, "s.yaml' cannot be used: nothing to read after 1 s"),
    _scenario("a sparse file of 2 MB", Special("sparse", 2 << 20), "a demo scenario may hold at most 1,048,576 bytes"),
    _scenario(
        "its NodeList nested 100,000 deep",
        "name: x\nnodelist: nodes.json\n",
        "nodelist: ",
        "nodes.json: nested deeper than 32 levels",
        extra={"nodes.json": DEEP_JSON},
    ),
    _scenario(
        "its NodeList a FIFO",
        "name: x\nnodelist: nodes.json\n",
        "nodes.json: nothing to read after 1 s",
        extra={"nodes.json": FIFO},
    ),
    _kubeconfig(
        "nested 5,000 deep on one line", _KUBECONFIG_HEAD + "x: " + "[" * 5000 + "]" * 5000 + "\n", "deeper than 16"
    ),
    _kubeconfig("aliases (billion laughs)", LAUGHS, "kubeconfig:1: a: anchors and aliases"),
    _kubeconfig(
        "an integer of 5,000 digits", _KUBECONFIG_HEAD + "x: " + "9" * 5000 + "\n", "a number of 5000 characters"
    ),
    _kubeconfig(
        "a sparse file of 16 MB",
        Special("sparse", 16 << 20),
        "kubeconfig: more than 8,388,608 bytes; a kubeconfig may hold at most 8,388,608 bytes (8 MiB)",
    ),
    HostileCase(
        "backup: a FIFO no one writes to",
        ("rollback", "--backup", "{dir}/backup.yaml", "--kubeconfig", "{dir}/no-kubeconfig"),
        2,
        files={"backup.yaml": FIFO},
        stderr_has=("backup.yaml: cannot read the backup: nothing to read after 1 s",),
    ),
]
