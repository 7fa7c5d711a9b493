"""A/B of the exec client in one run: ``Cluster.verify()`` of N GPU nodes, alternately with the exec client
of an older tree (the hand-written websocket client before issue 26 item 4) and with this tree's.

The cluster is the one ``benchmarks/verification.py`` builds (the ``large`` scenario cut to ``--nodes`` GPU
nodes, 50 ms per exec, 2 s pod start, an upstream driver applied and rolled out once); then each round runs
``verify()`` once per client, in the order old, new, new, old … so that a change of the machine's load
falls on both. The old client's modules are read from ``--old-tree`` (e.g. ``git archive <commit> | tar -x
-C /tmp/old``) and loaded under other names, its ``exec`` methods bound to this tree's gateway; everything
else (the engine, the verification, the request path) is this tree's.

    .venv/bin/python benchmarks/exec_ab.py --old-tree /tmp/exec-old [--nodes 5000] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import machine, served
from benchmarks.verification import LoopLag, count_requests, scenario_file, settle

_OLD = {  # module of the old tree -> the name it is loaded under
    "wizard/cluster/transport.py": "old_exec.transport",
    "wizard/cluster/gateway/wsframes.py": "old_exec.wsframes",
    "wizard/cluster/gateway/wsconnection.py": "old_exec.wsconnection",
    "wizard/cluster/gateway/websocket.py": "old_exec.websocket",
    "wizard/cluster/gateway/execs.py": "old_exec.execs",
}


def load_old(tree: Path) -> ModuleType:
    """The old tree's exec modules, importing one another under their new names; its ``execs`` module."""
    sys.modules["old_exec"] = ModuleType("old_exec")
    module = None
    for path, name in _OLD.items():
        source = (tree / path).read_text()
        for other, alias in _OLD.items():
            dotted = other.removesuffix(".py").replace("/", ".")
            source = source.replace(f"from {dotted} import", f"from {alias} import")
        spec = importlib.util.spec_from_loader(name, loader=None, origin=str(tree / path))
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        exec(compile(source, str(tree / path), "exec"), module.__dict__)
    assert module is not None
    return module


def gateway_classes(old_execs: ModuleType) -> dict[str, type]:
    from wizard.cluster.gateway import Gateway

    class OldGateway(old_execs.Execs, Gateway):  # type: ignore[misc,name-defined]
        """This tree's gateway with the old exec (its dialer in ``_execs``, closed without an await)."""

        async def close(self) -> None:
            if self._execs is not None:
                self._execs.close()
                self._execs = None
            await self.api.close()

    return {"old": OldGateway, "new": Gateway}


async def switch(gateway: Any, cls: type) -> None:
    """Close the exec client in use and give ``gateway`` the other one (a fresh one is made by the first exec)."""
    if gateway._execs is not None:
        closing = gateway._execs.close()
        if asyncio.iscoroutine(closing):
            await closing
        gateway._execs = None
    gateway.__class__ = cls


async def run(kubeconfig: Path, server: Any, args: argparse.Namespace, classes: dict[str, type]) -> dict[str, Any]:
    from wizard.cluster.facade import Cluster
    from wizard.engine.plan import Plan
    from wizard.engine.render import render
    from wizard.engine.results import Check

    plan = Plan.model_validate(
        {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"}}
    )
    out: dict[str, Any] = {"machine": machine(), "nodes": args.nodes, "runs": []}
    async with await Cluster.connect(kubeconfig=str(kubeconfig), timeout=600) as cluster:
        start = time.perf_counter()
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        with tempfile.TemporaryDirectory() as backups:
            await cluster.apply(prepared, backup_dir=backups)
        async with contextlib.aclosing(cluster.rollout(plan, interval=0.5, timeout=1800)) as rollout:
            async for status in rollout:
                final = status
        if final.phase != "ready":
            raise SystemExit(f"rollout did not get ready: {final.message}")
        out["rollout_s"] = round(time.perf_counter() - start, 1)
        gateway = cluster.gateway
        order = [("old", "new"), ("new", "old")]
        for round_ in range(args.rounds):
            for name in order[round_ % 2]:
                await settle(server)
                await switch(gateway, classes[name])
                counts = count_requests(gateway)
                lag = LoopLag()
                lag.start()
                start, cpu, server_cpu = time.perf_counter(), time.process_time(), server.cpu_seconds()
                checks = [c async for c in cluster.verify(plan, concurrency=16, timeout=120) if isinstance(c, Check)]
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                run_ = {
                    "client": name,
                    "s": round(wall, 2),
                    "client_cpu_s": round(cpu, 2),
                    "client_cpu_ms_per_node": round(cpu / args.nodes * 1000, 2),
                    "server_cpu_s": round(server.cpu_seconds() - server_cpu, 2),
                    "checks": len(checks),
                    "failed_checks": sum(not c.ok for c in checks),
                    "requests": dict(counts),
                    **await lag.stop(),
                }
                if name == "old":  # the old client ran (its dialer's count of connections dialled ahead)
                    run_["taken_ahead"] = gateway._execs.taken_ahead
                for attribute in ("call", "watch", "exec"):  # count_requests' wrappers off again
                    delattr(gateway, attribute)
                out["runs"].append(run_)
                print(json.dumps(run_), file=sys.stderr, flush=True)
        await switch(gateway, classes["new"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-tree", type=Path, required=True)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    classes = gateway_classes(load_old(args.old_tree))
    with tempfile.TemporaryDirectory() as tmp:
        scenario = scenario_file(Path(tmp), args.nodes, args.latency_ms)
        with served(str(scenario), pod_start_latency=2.0) as server:
            out = asyncio.run(run(server.kubeconfig, server, args, classes))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for r in out["runs"]:
            print(
                f"{r['client']}: verify {r['s']} s, client CPU {r['client_cpu_s']} s ({r['client_cpu_ms_per_node']} ms per node), "
                f"server CPU {r['server_cpu_s']} s, {r['failed_checks']} of {r['checks']} checks failed, stall {r['max_stall_ms']} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
