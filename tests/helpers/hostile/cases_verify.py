"""Hostile inputs of the h2 area (kubeconfig exec plugins, verify) for the hostile-input catalogue.

Each case is a kubeconfig whose user runs an exec credential plugin that is missing, fails, or
answers nonsense, with escape sequences, carriage returns and newlines in every text it controls.
None needs a network: the plugin fails before any connection is made. The plugins that run are
``sh -c`` one-liners written here (nothing gpu-wizard generated is executed).
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase


def _kubeconfig(exec_block: str) -> str:
    """A kubeconfig with one context whose user has ``exec_block`` (YAML lines under ``exec:``)."""
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: eks\n"
        "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\n    certificate-authority-data: Q0EK\n"
        "contexts:\n- name: eks\n  context: {cluster: c, user: u}\n"
        f"users:\n- name: u\n  user:\n    exec:\n{exec_block}"
    )


_DISCOVER = ("discover", "--kubeconfig", "{dir}/kubeconfig")

CASES: list[HostileCase] = [
    HostileCase(
        name="exec plugin missing, installHint with ESC and newlines",
        argv=_DISCOVER,
        expect_exit=2,
        files={
            "kubeconfig": _kubeconfig(
                "      apiVersion: client.authentication.k8s.io/v1\n"
                "      command: gke-gcloud-auth-plugin-missing\n"
                '      installHint: "Install it:\\n\\e[2J\\e[1mgcloud components install\\e[0m\\r\\nthen retry"\n'
            )
        },
        stderr_has=(
            "exec plugin gke-gcloud-auth-plugin-missing not found",
            "hint: Install it: gcloud components install then retry",
        ),
    ),
    HostileCase(
        name="exec plugin fails with coloured multi-line stderr",
        argv=_DISCOVER,
        expect_exit=2,
        files={
            "kubeconfig": _kubeconfig(
                "      apiVersion: client.authentication.k8s.io/v1beta1\n      command: sh\n"
                "      args: ['-c', 'printf \"\\033[31mtoken expired\\033[0m\\r\\n\\033]0;owned\\007run sso login\\n\" >&2; exit 7']\n"
            )
        },
        stderr_has=("exec plugin sh failed (exit code 7): token expired run sso login",),
    ),
    HostileCase(
        name="exec plugin prints control characters instead of an ExecCredential",
        argv=_DISCOVER,
        expect_exit=2,
        files={
            "kubeconfig": _kubeconfig(
                "      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n"
                "      args: ['-c', 'printf \"\\033[2K\\rnot json\\000\\n\"']\n"
            )
        },
        stderr_has=("exec plugin sh printed no ExecCredential JSON: not json",),
    ),
    HostileCase(
        name="exec plugin answers with another apiVersion",
        argv=_DISCOVER,
        expect_exit=2,
        files={
            "kubeconfig": _kubeconfig(
                "      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n"
                '      args: [\'-c\', \'echo \'\'{"apiVersion": "x\\u001b[2J", "kind": "ExecCredential", '
                '"status": {"token": "t"}}\'\'\']\n'
            )
        },
        stderr_has=(
            "exec plugin sh answered with apiVersion",
            "the kubeconfig asks for client.authentication.k8s.io/v1",
        ),
    ),
    HostileCase(
        name="exec plugin command with escape sequences in its name",
        argv=_DISCOVER,
        expect_exit=2,
        files={
            "kubeconfig": _kubeconfig(
                '      apiVersion: client.authentication.k8s.io/v1\n      command: "evil\\e[2J\\rplugin"\n'
            )
        },
        stderr_has=("exec plugin evil plugin not found",),
    ),
    HostileCase(
        name="exec plugin with an apiVersion that is not client.authentication",
        argv=_DISCOVER,
        expect_exit=2,
        files={"kubeconfig": _kubeconfig('      apiVersion: "v1\\e[31m"\n      command: sh\n')},
        stderr_has=("is not client.authentication.k8s.io/v1",),
    ),
]
