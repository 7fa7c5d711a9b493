"""Loading credentials like kubectl: a kubeconfig context (its exec plugin run here, as kubectl runs it),
or the pod's service account in-cluster; and importing the generated API classes off the event loop.
"""

from __future__ import annotations

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway.kube import ConfigException, client, config
from wizard.cluster.kubeconfig import (
    choose_context,
    context_kubeconfig,
    exec_credential,
    existing_paths,
    with_credential,
)


async def load_kubeconfig(kubeconfig: str | None, context: str | None) -> tuple[client.Configuration, str]:
    chosen = choose_context(kubeconfig, context)
    configuration = client.Configuration()
    document = context_kubeconfig(kubeconfig, chosen)
    users = document["users"]
    try:
        if users and isinstance(users[0]["user"].get("exec"), dict):
            # The plugin runs here, as kubectl runs it (cluster info, install hint, its errors as text);
            # the client library only gets the credential it returned.
            credential = with_credential(document, await exec_credential(document))
            await config.load_kube_config_from_dict(
                config_dict=credential, context=chosen, client_configuration=configuration
            )
        else:
            await config.load_kube_config(
                config_file=existing_paths(kubeconfig),
                context=chosen,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, KeyError, ValueError, TypeError, AttributeError) as exc:
        raise ClusterError(
            f"context {chosen!r}: cannot load its cluster or credentials ({exc})",
            "log in again (the credentials may be missing or expired) or fix the kubeconfig",
        ) from None
    except OSError as exc:
        raise ClusterError(f"context {chosen!r}: cannot read a file it names ({exc})") from None
    return configuration, chosen


def import_api_classes() -> None:
    """Import the generated API classes the gateway builds (the client loads them lazily).

    Their pydantic models take about a second of CPU to import; in a thread that second no longer
    stalls the caller's event loop (the TUI's Connect step).
    """
    apis = ("ApiClient", "CoreV1Api", "AppsV1Api", "BatchV1Api", "CustomObjectsApi", "AuthorizationV1Api", "VersionApi")
    for name in apis:
        getattr(client, name)


def in_cluster_configuration() -> client.Configuration:
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise ClusterError(
            f"in-cluster configuration unavailable ({exc})",
            "--in-cluster works only inside a pod with a service account; use --kubeconfig/--context elsewhere",
        ) from None
    return configuration
