"""Hostile registry mirrors for the hostile-input catalogue: ``--registry-mirror`` and the answers
file's ``driver.registryMirrors``.

Every case is refused before any connection: a bad flag by the argument parser, a bad answers file by
the plan. (A malformed demo marker in a kubeconfig is refused only once the Kubernetes client has
loaded, past the catalogue's 2 s bound on a loaded machine: tests/test_registry_mirrors.py has those.)
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.hostile.case import HostileCase

EXAMPLES = Path(__file__).resolve().parents[3] / "assets" / "examples"
GOOD_NODES = (EXAMPLES / "sle-micro-precompiled.nodes.json").read_text(encoding="utf-8")
RENDER = ("render", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/nodes.json")
APPLY = ("apply", "--answers", "{dir}/answers.yaml", "--kubeconfig", "{dir}/kubeconfig")
ANSWERS = (
    "version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
)


def bad_flag(name: str, value: str, expected: str) -> HostileCase:
    """``apply --registry-mirror VALUE``: exit 2 from the argument parser, naming the flag."""
    return HostileCase(
        name=f"--registry-mirror: {name}",
        argv=(*APPLY, "--registry-mirror", value),
        expect_exit=2,
        files={"answers.yaml": ANSWERS},
        stderr_has=("argument --registry-mirror: ", expected),
    )


def bad_answers(name: str, mirrors: str, *expected: str) -> HostileCase:
    """``render`` of an answers file whose ``driver.registryMirrors`` is ``mirrors`` (YAML lines)."""
    return HostileCase(
        name=f"answers registryMirrors: {name}",
        argv=RENDER,
        expect_exit=2,
        files={"answers.yaml": ANSWERS + "  registryMirrors:" + mirrors, "nodes.json": GOOD_NODES},
        stderr_has=("answers.yaml:6: driver.registryMirrors", *expected),
    )


CASES: list[HostileCase] = [
    bad_flag("no '='", "https://mirror.example.com", "is not SOURCE=MIRROR"),
    bad_flag("escape sequence in the source", "nvcr.io\x1b[2J=https://m.example.com", "control or non-ASCII"),
    bad_flag("carriage return in the mirror", "nvcr.io=https://m.example.com\r\nrm -rf /", "control or non-ASCII"),
    bad_flag("plain http to another host", "nvcr.io=http://mirror.example.com", "plain http is allowed on loopback"),
    bad_flag("credentials in the URL", "nvcr.io=https://user:secret@m.example.com", "no user, query or fragment"),
    bad_flag("a URL as the source", "https://nvcr.io=https://m.example.com", "is not a registry host"),
    bad_flag("an upper-case path", "nvcr.io=https://m.example.com/Nvidia", "lower-case path components"),
    bad_flag("a mirror URL of 4000 characters", "nvcr.io=https://m.example.com/" + "a" * 4000, "longer than 255"),
    bad_answers("ftp mirror", "\n    nvcr.io: ftp://mirror.example.com\n", "is not an https:// URL"),
    bad_answers("a list, not a mapping", "\n  - nvcr.io=https://mirror.example.com\n", "valid dictionary"),
    bad_answers("NUL in the mirror", '\n    nvcr.io: "https://m.example.com\\0"\n', "control or non-ASCII"),
    bad_answers("escape in the source", '\n    "nvcr\\e[31m.io": https://m.example.com\n', "control or non-ASCII"),
]
