"""`make real-cluster RELEASE=v26.3.3 NODES=nodes.json`: the real-cluster lane in the foreground.

Builds (or finds) the binaries, starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kwok with the NodeList's nodes and the real operator (`--operator none`, `OPERATOR=none`: neither the
operator nor its CRDs until a helm install brings the chart's Deployment), prints one `export KUBECONFIG=…` line once the
operator reconciles, and stops everything on Ctrl-C or SIGTERM. Logs stay in the printed folder.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
from pathlib import Path

from tests.realcluster.build import BuildError, build
from tests.realcluster.cluster import ClusterStartError, RealCluster

DEFAULT_NODES = Path(__file__).resolve().parents[2] / "assets" / "examples" / "sle-micro-precompiled.nodes.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make real-cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--release", default="", help="operator release (default: the newest built)")
    parser.add_argument("--nodes", type=Path, default=DEFAULT_NODES, help="a NodeList whose labels the fake nodes take")
    parser.add_argument("--user", default="admin", choices=["admin", "wizard"], help="whose kubeconfig to print")
    parser.add_argument(
        "--operator",
        default="running",
        choices=["running", "none"],
        help="none: start without the operator and its CRDs (gpu-wizard apply --install-operator installs the "
        "chart; the operator binary runs once the chart's Deployment exists, as the chart's ServiceAccount)",
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
    cluster = RealCluster(built, workdir, release)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        installed = args.operator != "none"
        cluster.start(items, installed=installed)
        print(f"real-cluster: GPU Operator {release}, {len(items)} nodes; logs in {workdir}", file=sys.stderr)
        if not installed:
            print("real-cluster: no operator yet: it starts once the chart's Deployment exists (helm)", file=sys.stderr)
        print(f"export KUBECONFIG={cluster.kubeconfig(args.user)}", flush=True)
        while not installed and not stop.is_set():
            if cluster.chart_deployment() is not None:
                cluster.start_operator_when_installed()
                print("real-cluster: the chart's Deployment exists: the operator runs", file=sys.stderr)
                break
            stop.wait(2)
        stop.wait()
    except ClusterStartError as error:
        print(f"real-cluster: {error}", file=sys.stderr)
        return 1
    finally:
        print("real-cluster: stopping", file=sys.stderr)
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
