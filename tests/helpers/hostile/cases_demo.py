"""Hostile scenario files for the demo cluster (``--demo FILE``, ``demo serve --scenario FILE``): refused in one line, exit 2.

Cases for the catalogue runner (``tests/helpers/hostile/case.py``); each fails while the scenario is read, before
any server starts, so it is fast. The NodeList cases go through the demo's own node reader
(``wizard.demo.rules.nodeinfo``): an ``osImage`` it cannot read back into an OS is refused, control
characters included, rather than turned into node labels.
"""

from __future__ import annotations

import json

from tests.helpers.hostile.case import HostileCase


def _nodelist(os_image: str, kernel: str = "5.15.0-1048-nvidia") -> str:
    node = {"metadata": {"name": "gpu-01"}, "status": {"nodeInfo": {"kernelVersion": kernel, "osImage": os_image}}}
    return json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": [node]})


_FROM_NODELIST = "name: hostile\nnodelist: nodes.json\n"

CASES: list[HostileCase] = [
    HostileCase(
        name="demo scenario: unknown operator release",
        argv=("discover", "--demo", "{dir}/s.yaml"),
        expect_exit=2,
        files={"s.yaml": "name: hostile\noperator:\n  release: v99.1.0\nnodes: []\n"},
        stderr_has=("operator.release", "v26.7.0"),
    ),
    HostileCase(
        name="demo scenario: NodeList osImage with an escape sequence",
        argv=("discover", "--demo", "{dir}/s.yaml"),
        expect_exit=2,
        files={"s.yaml": _FROM_NODELIST, "nodes.json": _nodelist("\x1b[31mEvil OS 1.0")},
        stderr_has=("recognisable OS",),
    ),
    HostileCase(
        name="demo scenario: NodeList osImage version carrying a terminal clear",
        argv=("demo", "serve", "--scenario", "{dir}/s.yaml"),
        expect_exit=2,
        files={"s.yaml": _FROM_NODELIST, "nodes.json": _nodelist("Evilos 1.0\x1b[2J")},
        stderr_has=("recognisable OS",),
    ),
    HostileCase(
        name="demo scenario: NodeList node without a kernel",
        argv=("discover", "--demo", "{dir}/s.yaml"),
        expect_exit=2,
        files={"s.yaml": _FROM_NODELIST, "nodes.json": _nodelist("Ubuntu 22.04.5 LTS", kernel="")},
        stderr_has=("lacks a name, kernel",),
    ),
]
