"""Loading credentials like kubectl: a kubeconfig context (its exec plugin run here, as kubectl runs it),
or the pod's service account in-cluster; and importing the generated API classes off the event loop.
"""

from __future__ import annotations

from typing import Any

from wizard.cluster.access.kubeconfig import (
    choose_context,
    context_kubeconfig,
    existing_paths,
    plugin_credential,
    with_credential,
)
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway.kube import ConfigException, client, config


async def load_kubeconfig(
    kubeconfig: str | None, context: str | None, credential: dict[str, Any] | None = None
) -> tuple[client.Configuration, str]:
    """The client's configuration for the context; ``credential``: its exec plugin's answer, when the
    caller already ran it (the CLI does, before this module's imports cost a second of CPU)."""
    chosen = choose_context(kubeconfig, context)
    configuration = client.Configuration()
    try:
        # The plugin runs as kubectl runs it (cluster info, install hint, its errors as text);
        # the client library only gets the credential it returned.
        credential = credential or await plugin_credential(kubeconfig, chosen)
        if credential is not None:
            document = with_credential(context_kubeconfig(kubeconfig, chosen), credential)
            await config.load_kube_config_from_dict(
                config_dict=document, context=chosen, client_configuration=configuration
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
