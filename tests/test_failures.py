"""The known-failure catalog and its matcher (wizard/engine/failures.py): pure, fed hostile log lines."""

from __future__ import annotations

import time

import pytest

from wizard.engine.failures import (
    MAX_LINE,
    Evidence,
    SignatureError,
    last_lines,
    match,
    parse_signatures,
    signatures,
)
from wizard.engine.textsafe import has_unsafe

DRIFT_PULL = (
    'Back-off pulling image "nvcr.io/nvidia/driver:580-5.15.0-1063-nvidia-ubuntu22.04": ErrImagePull: '
    "nvcr.io/nvidia/driver:580-5.15.0-1063-nvidia-ubuntu22.04: not found"
)


def _ids(evidence: list[Evidence]) -> list[str]:
    return [f.signature.id for f in match(evidence, {"node": "gpu-1", "kernel": "5.15.0-1063-nvidia"})]


def test_every_bundled_signature_names_its_operator_issue_cause_and_fix() -> None:
    catalog = signatures()
    assert len({s.id for s in catalog}) == len(catalog) >= 8
    for sig in catalog:
        known = sig.issue.startswith("NVIDIA/") and "#" in sig.issue
        assert known or sig.issue == "no public operator issue", sig.id  # never a made-up number
        assert sig.cause and sig.fix and sig.patterns, sig.id
    issues = {s.issue for s in catalog} | {a for s in catalog for a in s.also}
    for number in ("#1726", "#974", "#91", "#337", "#1220", "#2596", "#406"):
        assert any(i.endswith(number) for i in issues), number


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (
            Evidence("log", "nvidia-driver-ctr", "Kernel module load error: Key was rejected by service"),
            "secure-boot-unsigned-module",
        ),
        (
            Evidence(
                "log", "nvidia-driver-ctr", "ERROR: The Nouveau kernel driver is currently in use by your system."
            ),
            "nouveau-loaded",
        ),
        (Evidence("log", "nvidia-driver-ctr", "Could not resolve Linux kernel version"), "kernel-headers-unavailable"),
        (
            Evidence("log", "nvidia-driver-ctr", "Could not unload NVIDIA driver kernel modules, driver is in use"),
            "host-driver-in-use",
        ),
        (
            Evidence("log", "driver-validation", "No pre-installed driver detected on the host: exit status 127"),
            "preinstalled-driver-not-found",
        ),
        (Evidence("label", "nvidia.com/gpu-driver-upgrade-state", "upgrade-failed"), "upgrade-failed"),
        (  # the validator's exec of the driver root's nvidia-smi, Go's error words (issue 35, defect 4)
            Evidence(
                "log",
                "driver-validation",
                "failed to validate the driver: chroot /run/nvidia/driver nvidia-smi: "
                "fork/exec /usr/bin/nvidia-smi: permission denied: exit status 126",
            ),
            "noexec-host-folder",
        ),
        (Evidence("status", "nvidia-driver-ctr waiting", DRIFT_PULL), "precompiled-kernel-drift"),
        (
            Evidence("log", "nvidia-driver-ctr", "this image is built for ubuntu22.04 but the host runs ubuntu24.04"),
            "driver-image-other-os",
        ),
        (
            Evidence(
                "event",
                "event Failed",
                'Failed to pull image "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04": not found',
            ),
            "driver-image-missing",
        ),
    ],
)
def test_each_signature_matches_the_real_text(evidence: Evidence, expected: str) -> None:
    assert _ids([evidence]) == [expected]


RUNTIME_NOT_FOUND = (  # the kubelet's ErrImagePull status message: containerd's error alone (no event wording)
    'rpc error: code = NotFound desc = failed to pull and unpack image "{0}": failed to resolve reference "{0}": '
    "{0}: not found"
)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/nvidia/driver:580.126.20-ubuntu22.04", "driver-image-missing"),
        ("nvcr.io/nvidia/driver:580-5.15.0-1063-nvidia-ubuntu22.04", "precompiled-kernel-drift"),
        ("nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0", "driver-manager-image-missing"),
    ],
)
def test_the_kubelets_err_image_pull_status_alone_is_read(image: str, expected: str) -> None:
    """A status line holding only the runtime's error (RBAC without events): still the pull failure, of that image."""
    evidence = Evidence("status", "nvidia-driver-ctr waiting", RUNTIME_NOT_FOUND.format(image))
    assert _ids([evidence]) == [expected]


def test_a_specific_signature_hides_the_generic_one_and_fills_the_fix() -> None:
    findings = match(
        [Evidence("status", "nvidia-driver-ctr waiting", DRIFT_PULL)], {"node": "gpu-1", "kernel": "5.15.0-1063-nvidia"}
    )
    assert [f.signature.id for f in findings] == ["precompiled-kernel-drift"]  # not also driver-image-missing
    assert "gpu-wizard check-kernel 5.15.0-1063-nvidia" in findings[0].fix and "gpu-1" in findings[0].fix


def test_sources_matter_a_log_line_is_not_an_upgrade_state() -> None:
    assert _ids([Evidence("log", "x", "upgrade-failed")]) == []


def test_the_fix_quotes_a_hostile_node_name() -> None:
    finding = match([Evidence("log", "x", "Key was rejected by service")], {"node": "gpu-1; rm -rf /\x1b[2J"})[0]
    assert "'gpu-1; rm -rf /\\x1b[2J'" in finding.fix and not has_unsafe(finding.fix)


def test_hostile_lines_are_bounded_and_printable() -> None:
    esc = Evidence("log", "nvidia-driver-ctr\x1b]0;owned\x07", "\x1b[2J\rKey was rejected by service\x1b[0m")
    huge = Evidence("log", "nvidia-driver-ctr", "Key was rejected by service " + "A" * 1_000_000)
    findings = match([esc, huge])
    assert len(findings) == 1
    shown = findings[0].as_dict()["lines"]
    assert len(shown) == 2 and all(not has_unsafe(line) for line in shown)
    assert all(len(line) < MAX_LINE + 100 for line in shown)


@pytest.mark.parametrize(
    "bomb",
    [
        "a" * 200_000,
        'pull image "' + "a" * 200_000,
        'pulling image "x:580' + ".1" * 100_000,
        "nouveau " + " " * 200_000 + "x",
        "containerd.sock" + " " * 200_000,
        "\x1b[" * 100_000,
    ],
)
def test_regex_bomb_input_is_matched_in_linear_time(bomb: str) -> None:
    evidence = [Evidence(source, "x", bomb) for source in ("log", "event", "status", "label")] * 50
    started = time.perf_counter()
    match(evidence)
    assert time.perf_counter() - started < 1.0


def test_an_unmatched_failure_keeps_its_last_log_lines() -> None:
    lines = [Evidence("log", "nvidia-driver-ctr", f"line {i}") for i in range(30)] + [Evidence("log", "x", "  ")]
    assert [e.text for e in last_lines(lines)] == [f"line {i}" for i in range(20, 30)]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("signatures: []", "signatures: must be a non-empty list"),
        (
            "signatures:\n- id: a\n  title: t\n  issue: i\n  sources: [log]\n  patterns: ['(a+)+$']\n  cause: c\n  fix: f\n",
            "nested quantifiers",
        ),
        (
            "signatures:\n- id: a\n  title: t\n  issue: i\n  sources: [disk]\n  patterns: [a]\n  cause: c\n  fix: f\n",
            "sources",
        ),
        (
            "signatures:\n- id: a\n  title: t\n  issue: i\n  sources: [log]\n  patterns: ['(']\n  cause: c\n  fix: f\n",
            "not a valid regex",
        ),
        (
            "signatures:\n- id: a\n  title: t\n  sources: [log]\n  patterns: [a]\n  cause: c\n  fix: f\n",
            "signatures[0].issue",
        ),
    ],
)
def test_a_malformed_catalog_is_refused_naming_the_field(text: str, error: str) -> None:
    with pytest.raises(SignatureError, match=error.replace("[", r"\[").replace("]", r"\]")):
        parse_signatures(text, "test.yaml")


def test_a_line_that_proves_the_signature_wrong_cancels_it() -> None:
    validator = [
        Evidence("log", "driver-validation", "No pre-installed driver detected on the host: exit status 14"),
        Evidence("log", "driver-validation", "Driver is not pre-installed on the host and is managed by GPU Operator."),
    ]
    assert _ids(validator[:1]) == ["preinstalled-driver-not-found"]
    assert _ids(validator) == []
