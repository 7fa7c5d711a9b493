"""Hostile inputs of ``gpu-wizard support-bundle`` (s6) for the hostile-input catalogue.

Each is refused before any cluster is reached: an output path whose folder name carries escape
sequences and a newline, an output that is a folder, an answers file with control characters.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase

CASES: list[HostileCase] = [
    HostileCase(
        name="support-bundle output folder named with ESC and a newline does not exist",
        argv=("support-bundle", "--demo", "kernel-drift", "-o", "{dir}/\x1b[2Jgone\nrm -rf ~/b.tar.gz"),
        expect_exit=2,
        stderr_has=("does not exist",),
        stdout_lacks=("rm -rf ~",),
    ),
    HostileCase(
        name="support-bundle output is a folder",
        argv=("support-bundle", "--demo", "kernel-drift", "-o", "{dir}/b.tar.gz"),
        expect_exit=2,
        files={"b.tar.gz/keep": ""},
        stderr_has=("b.tar.gz: is a folder",),
    ),
    HostileCase(
        name="support-bundle answers file with escape sequences",
        argv=("support-bundle", "--demo", "kernel-drift", "--answers", "{dir}/a.yaml", "-o", "{dir}/b.tar.gz"),
        expect_exit=2,
        files={"a.yaml": 'version: 1\nmode: "\\e[31mupstream\\r\\nevil"\n'},
        stderr_has=("mode",),
    ),
]
