"""`make real-cluster RELEASE=v26.3.3 NODES=nodes.json`: the real-cluster lane in the foreground.

Builds (or finds) the binaries, starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kwok with the NodeList's nodes (`--reachable`, `REACHABLE=`: the only registry hosts they can pull from) and the real operator (`--operator none`, `OPERATOR=none`: neither the
operator nor its CRDs until a helm install brings the chart's Deployment), prints one `export KUBECONFIG=…` line once the
operator reconciles, and stops everything on Ctrl-C or SIGTERM. Logs stay in the printed folder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from tests.realcluster.build import BuildError, build
from tests.realcluster.cluster import ClusterStartError, RealCluster

DEFAULT_NODES = Path(__file__).resolve().parents[2] / "assets" / "examples" / "sle-micro-precompiled.nodes.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make real-cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--release", default="", help="operator release (default: the newest built)")
    parser.add_argument(
        "--nodes",
        type=Path,
        default=DEFAULT_NODES,
        help="a NodeList whose labels the fake nodes take; an item's annotation lane.gpu-wizard.dev/host gives its "
        'host as JSON (e.g. {"nouveau": true, "secure_boot": true}), what the host probe finds there',
    )
    parser.add_argument("--user", default="admin", choices=["admin", "wizard"], help="whose kubeconfig to print")
    parser.add_argument(
        "--operator",
        default="running",
        choices=["running", "none"],
        help="none: start without the operator and its CRDs (gpu-wizard apply --install-operator installs the "
        "chart; the operator binary runs once the chart's Deployment exists, as the chart's ServiceAccount)",
    )
    parser.add_argument(
        "--reachable",
        default=None,
        help="comma-separated registry hosts the nodes can pull from (default: every host); a pod with an image "
        "elsewhere ends in ErrImagePull, then ImagePullBackOff, as a kubelet's would. Without nvcr.io in it the "
        "operator's Deployment names the first of them (an air-gapped cluster runs its operator from its registry)",
    )
    args = parser.parse_args(argv)
    try:
        built = build()
    except BuildError as error:
        print(f"real-cluster: {error}", file=sys.stderr)
        return 1
    release = args.release or built.releases()[-1]
    if release not in built.releases():
        print(f"real-cluster: --release {release}: built releases are {', '.join(built.releases())}", file=sys.stderr)
        return 2
    try:
        items = json.loads(args.nodes.read_text())["items"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"real-cluster: --nodes {args.nodes}: not a NodeList ({error})", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="gpu-wizard-rc-"))
    reachable = None if args.reachable is None else [h.strip() for h in args.reachable.split(",") if h.strip()]
    cluster = RealCluster(built, workdir, release, reachable=reachable)
    started = f"GPU Operator {release}, {len(items)} nodes; logs in {workdir}"
    return run_until_stopped(cluster, items, started, args.user, installed=args.operator != "none")


class Startable(Protocol):
    def start(self, nodes: list[dict[str, Any]], *, installed: bool = True) -> None: ...
    def kubeconfig(self, user: str) -> Path: ...
    def stop(self) -> None: ...
    def chart_deployment(self) -> Any: ...
    def start_operator_when_installed(self) -> None: ...


def run_until_stopped(
    cluster: Startable, items: list[dict[str, Any]], started: str, user: str, *, installed: bool = True
) -> int:
    """Start ``cluster``, print its kubeconfig, and stop it on the first SIGINT or SIGTERM, whenever that comes.

    A signal that comes during the start stops the cluster as soon as the start returns (a start is
    never cut in the middle of spawning a component it would then not know to stop). Without ``installed``
    (``--operator none``) the operator binary is started once the chart's Deployment exists.
    """
    with signals_woken((signal.SIGINT, signal.SIGTERM)) as wait:
        try:
            cluster.start(items, installed=installed)
            print(f"real-cluster: {started}", file=sys.stderr)
            if not installed:
                print(
                    "real-cluster: no operator yet: it starts once the chart's Deployment exists (helm)",
                    file=sys.stderr,
                )
            print(f"export KUBECONFIG={cluster.kubeconfig(user)}", flush=True)
            while not installed:
                if cluster.chart_deployment() is not None:
                    cluster.start_operator_when_installed()
                    print("real-cluster: the chart's Deployment exists: the operator runs", file=sys.stderr)
                    break
                if wait(2) is not None:
                    return 0
            wait()
        except ClusterStartError as error:
            print(f"real-cluster: {error}", file=sys.stderr)
            return 1
        finally:
            print("real-cluster: stopping", file=sys.stderr)
            cluster.stop()
    return 0


@contextlib.contextmanager
def signals_woken(signums: tuple[int, ...]) -> Iterator[Any]:
    """Handlers for ``signums`` that only wake the returned ``wait(timeout=None)`` (a read of a socket pair).

    The handlers take no lock and run no code of their own: Python's C-level handler writes the
    signal's number to the socket (:func:`signal.set_wakeup_fd`) and ``wait()`` returns. A handler
    that set a ``threading.Event`` the main thread waited on could deadlock (a second signal in the
    window where the main thread holds the Event's lock, found hung on a futex with the whole control
    plane left running); this cannot, however many signals come and whenever.
    """
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous = {signum: signal.signal(signum, lambda *_: None) for signum in signums}

    def wait(timeout: float | None = None) -> int | None:
        """The first signal's number once one came; None if none came within ``timeout`` seconds."""
        reader.settimeout(timeout)
        try:
            return reader.recv(1)[0]
        except TimeoutError:
            return None

    try:
        yield wait
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        reader.close()
        writer.close()


if __name__ == "__main__":
    sys.exit(main())
