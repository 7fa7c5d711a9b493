"""Hostile inputs of ``apply`` and ``rollback`` (the h1 area): damaged or foreign backup files.

A rollback replaces cluster objects with what a backup holds and deletes the ones it lists as
created, so a backup is untrusted input: each case must be refused (exit 2) with one line, before
any connection (the kubeconfig named here does not exist), within the catalogue's time and memory
bounds. Cases that need a cluster (``apply`` with a missing image) take longer than the catalogue's
2 s and are tested in ``tests/test_apply_images.py`` and ``tests/test_cli_cluster.py`` instead.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase

HEADER = '# gpu-wizard-backup: {"context": "x", "created": [], "server": "https://x", "version": 1}\n---\n'
POLICY = "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: {name}\nspec: {{}}\n"
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)


def _rollback(name: str, text: str | bytes, *expected: str) -> HostileCase:
    return HostileCase(
        name=f"rollback-{name}",
        argv=("rollback", "--backup", "{dir}/backup.yaml", "--kubeconfig", "{dir}/no-kubeconfig"),
        expect_exit=2,
        files={"backup.yaml": text},
        stderr_has=expected,
    )


CASES: list[HostileCase] = [
    _rollback("binary", bytes(range(256)) * 8, "not UTF-8 text"),
    _rollback("too-large", HEADER + "#" * (1024 * 1024 + 1), "a backup may hold at most 1,048,576 bytes (1 MiB)"),
    _rollback("no-header", POLICY.format(name="cluster-policy"), "not a gpu-wizard backup"),
    _rollback("alias-bomb", HEADER + LAUGHS, "backup.yaml:3: a: anchors and aliases (&name, *name) are not accepted"),
    _rollback("deep-nesting", HEADER + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64 levels"),
    _rollback("header-not-object", HEADER.replace('{"context"', '[{"context"').replace("1}", "1}]"), "damaged backup"),
    _rollback("header-huge-integer", HEADER.replace('"version": 1', '"version": ' + "9" * 5000), "damaged backup"),
    _rollback("header-deep-json", "# gpu-wizard-backup: " + "[" * 100000 + "\n", "damaged backup"),
    _rollback(
        "foreign-kind",
        HEADER + "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: admin\n",
        "gpu-wizard only manages nvidia.com ClusterPolicy and NVIDIADriver objects",
    ),
    _rollback(
        "foreign-group",
        HEADER + "apiVersion: evil.example.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: cluster-policy\n",
        "gpu-wizard only manages nvidia.com ClusterPolicy and NVIDIADriver objects",
    ),
    _rollback(
        "deletes-a-namespace",
        HEADER.replace('"created": []', '"created": [["v1", "Namespace", "kube-system"]]'),
        "gpu-wizard only manages nvidia.com ClusterPolicy and NVIDIADriver objects",
    ),
    _rollback("created-not-a-list", HEADER.replace('"created": []', '"created": "all"'), "created is not a list"),
    _rollback("name-with-escape", HEADER + POLICY.format(name='"cp\\e[2K\\rx"'), "is not a DNS subdomain name"),
    _rollback("name-path", HEADER + POLICY.format(name="../../etc"), "is not a DNS subdomain name"),
    _rollback(
        "object-without-name",
        HEADER + "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {}\n",
        "an object without apiVersion, kind and name",
    ),
    HostileCase(
        name="rollback-backup-is-a-folder",
        argv=("rollback", "--backup", "{dir}", "--kubeconfig", "{dir}/no-kubeconfig"),
        expect_exit=2,
        stderr_has=("cannot read the backup",),
    ),
]
