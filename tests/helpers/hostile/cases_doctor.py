"""Hostile inputs of ``gpu-wizard doctor`` for the hostile-input catalogue (``tests/helpers/hostile/case.py``).

Each answers file is refused while it is read, before any cluster is reached: one line naming the
field, exit 2, no control character on the terminal.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase

CASES: list[HostileCase] = [
    HostileCase(
        name="doctor: answers mode with a terminal clear",
        argv=("doctor", "--answers", "{dir}/answers.yaml", "--kubeconfig", "{dir}/none"),
        expect_exit=2,
        files={"answers.yaml": 'version: 1\nmode: "\\e[2Jpreinstalled"\n'},
        stderr_has=("mode",),
    ),
    HostileCase(
        name="doctor: answers operatortype with a carriage return and an OSC title",
        argv=("doctor", "--answers", "{dir}/answers.yaml", "--kubeconfig", "{dir}/none"),
        expect_exit=2,
        files={"answers.yaml": 'version: 1\noperatortype: "pre\\rinstalled\\e]0;owned\\a"\n'},
        stderr_has=("operatortype",),
    ),
]
