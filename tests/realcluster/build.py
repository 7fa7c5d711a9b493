"""Builds the real-cluster lane's binaries from pinned Go modules, cached outside the clone.

`python -m tests.realcluster.build` builds kube-apiserver, kube-controller-manager, kube-scheduler and
kubectl (`go/k8s`), etcd (`go/etcd`), kwok (`go/kwok`), helm (`go/helm`) and the GPU Operator of every release whose
module the proxy serves (`go/operator-<release>`), and prints the cache folder on stdout.

A release the proxy refuses (v26.7.0: 403 for its commit in every version form) is built from a git
checkout of github.com/NVIDIA/gpu-operator instead: its wrapper's go.mod names the commit
(`// source-commit: <sha>`), `$GPU_WIZARD_OPERATOR_GIT` points at the checkout (a clone or a bare
mirror; default `../gpu-operator` beside the clone, else CI's `../shared/operator-git/gpu-operator.git`), the commit's tree is exported into the cache and
`go build -modfile` adds a `replace` to it. Every other module still comes from the proxy, checked
against the committed go.sum. Without the checkout that release is left out, and said so
(`unbuilt_releases`).

The folder is keyed by the pins (the Go version, every go.mod and go.sum, this file), so a warm run
rebuilds nothing: it finds `<key>/.complete` and returns at once. Go's own caches (modules, compiled
packages) live beside the keyed folders, so a change of one pin recompiles only what it touches.
Progress goes to stderr; each step's wall time and peak memory land in `<key>/build-report.json`.

Why each flag (see ../../docs/real-cluster.md): the version ldflags make the API server report a real
gitVersion (the operator refuses to reconcile when it is not semver); CGO is off so no C toolchain is
needed; GOTOOLCHAIN=local so a go line newer than the machine's fails at once instead of downloading.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent / "go"
CACHE_ROOT = Path(os.environ.get("GPU_WIZARD_RC_CACHE", Path.home() / ".cache" / "gpu-wizard" / "realcluster"))
K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
OPERATOR_MODULE = "github.com/NVIDIA/gpu-operator"
OPERATOR_GIT_ENV = "GPU_WIZARD_OPERATOR_GIT"
KWOK_MODULE = "sigs.k8s.io/kwok"
HELM_MODULE = "helm.sh/helm/v4"
"""Helm (``go/helm``): installs the operator's real chart into the real API server (``OPERATOR=none``)."""


class BuildError(RuntimeError):
    """A step of the build failed; the message names the step and carries the tail of its output."""


@dataclass(frozen=True)
class Built:
    """Where the lane's pieces are once built."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def operator_binary(self, release: str) -> Path:
        return self.bin / f"gpu-operator-{release}"

    def operator_assets(self, release: str) -> Path:
        """The folder the operator expects at /opt/gpu-operator (assets/ with manifests/ inside)."""
        return self.root / "operator" / release / "opt"

    def operator_crds(self, release: str) -> Path:
        return self.root / "operator" / release / "crds"

    @property
    def kwok_stages(self) -> Path:
        return self.root / "kwok" / "stage"

    @property
    def kwok_crds(self) -> Path:
        return self.root / "kwok" / "crd"

    def releases(self) -> list[str]:
        return sorted(p.name for p in (self.root / "operator").iterdir() if (p / "opt").is_dir())


def operator_releases() -> list[str]:
    """Releases this machine can build: a complete wrapper module (a go.sum) and, for one built from a git
    checkout, that checkout."""
    return sorted(release for release, why in _release_status().items() if not why)


def unbuilt_releases() -> dict[str, str]:
    """Each release left out of the lane here, with why."""
    return {release: why for release, why in _release_status().items() if why}


def _release_status() -> dict[str, str]:
    status = {}
    for wrapper in sorted(GO_DIR.glob("operator-*")):
        release = wrapper.name.removeprefix("operator-")
        if not (wrapper / "go.sum").is_file():
            status[release] = f"{wrapper.relative_to(GO_DIR.parent)} has no go.sum (see its go.mod)"
        elif source_commit(wrapper) and not _checkout_has(source_commit(wrapper)):
            status[release] = (
                f"the module proxy does not serve {release}'s commit: set {OPERATOR_GIT_ENV} to a git checkout "
                f"of {OPERATOR_MODULE} that holds {source_commit(wrapper)} (or clone it to ../gpu-operator "
                "beside this clone) to build it from there"
            )
        else:
            status[release] = ""
    return status


def source_commit(wrapper: Path) -> str:
    """The commit a wrapper builds from a git checkout (`// source-commit: <sha>` in its go.mod), or ""."""
    found = re.search(r"^// source-commit: ([0-9a-f]{40})$", (wrapper / "go.mod").read_text(), re.MULTILINE)
    return found.group(1) if found else ""


def operator_checkout() -> str:
    """The git checkout of the operator: `$GPU_WIZARD_OPERATOR_GIT`, else a clone beside this one
    (`../gpu-operator`), else the shallow bare mirror CI has beside every clone
    (`../shared/operator-git/gpu-operator.git`, holding the v26.7.0 commit), else ""."""
    beside = GO_DIR.parents[3]
    candidates = (beside / "gpu-operator", beside / "shared" / "operator-git" / "gpu-operator.git")
    found = next((str(path) for path in candidates if path.is_dir()), "")
    return _readable_by_git(os.environ.get(OPERATOR_GIT_ENV, "") or found)


def _readable_by_git(checkout: str) -> str:
    """`checkout`, or a copy of it in the cache that git accepts: a bare mirror copied without its empty
    `refs/` folder (as ../shared's read-only one is: its refs are all in packed-refs) is no repository to
    git until that folder exists, and a read-only tree cannot be given one."""
    source = Path(checkout) if checkout else None
    if source is None or not (source / "packed-refs").is_file() or (source / "refs").is_dir():
        return checkout
    copy = CACHE_ROOT / "operator-git" / hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    if not (copy / "refs").is_dir():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy)
        for path in [copy, *copy.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
        (copy / "refs").mkdir()
    return str(copy)


def _checkout_has(commit: str) -> bool:
    checkout = operator_checkout()
    if not checkout or shutil.which("git") is None:
        return False
    probe = ["git", "-C", checkout, "cat-file", "-e", f"{commit}^{{commit}}"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def export_source(wrapper: Path) -> Path:
    """The tree of the wrapper's source commit, exported once from the checkout into the cache."""
    commit = source_commit(wrapper)
    pseudo = required_version(wrapper, OPERATOR_MODULE)
    if not pseudo.endswith(commit[:12]):
        raise BuildError(f"{wrapper / 'go.mod'}: requires {pseudo}, which is not commit {commit}")
    target = CACHE_ROOT / "src" / f"gpu-operator-{commit}"
    if (target / ".complete").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", operator_checkout(), "archive", commit], stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, capture_output=True, text=True)
    if archive.wait() != 0 or untar.returncode != 0:
        raise BuildError(f"exporting {commit} from {operator_checkout()} failed: {untar.stderr.strip()[-500:]}")
    (target / ".complete").touch()
    return target


def required_version(module_dir: Path, module: str) -> str:
    """The version a wrapper module's go.mod requires of `module`."""
    text = (module_dir / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
    if not found:
        raise BuildError(f"{module_dir / 'go.mod'}: no requirement on {module}")
    return found.group(1)


def go_version() -> str:
    return subprocess.run(["go", "version"], check=True, capture_output=True, text=True).stdout.strip()


def cache_key() -> str:
    digest = hashlib.sha256(go_version().encode())
    for path in [*sorted(GO_DIR.rglob("go.*")), Path(__file__)]:
        digest.update(str(path.relative_to(GO_DIR.parent)).encode())
        digest.update(path.read_bytes())
    digest.update(" ".join(operator_releases()).encode())  # a checkout that appears adds its release
    return digest.hexdigest()[:16]


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOMODCACHE=str(CACHE_ROOT / "gomod"),
        GOCACHE=str(CACHE_ROOT / "gocache"),
        GOTOOLCHAIN="local",
        CGO_ENABLED="0",
        GOFLAGS="-mod=readonly -trimpath",
    )
    return env


def k8s_ldflags(version: str) -> str:
    """Version stamping as Kubernetes' hack/lib/version.sh does it, for server and client packages."""
    major, minor = version.removeprefix("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        for key, value in (
            ("gitVersion", version),
            ("gitMajor", major),
            ("gitMinor", minor),
            ("gitTreeState", "clean"),
            ("buildDate", "2026-01-01T00:00:00Z"),
        ):
            flags.append(f"-X '{package}.{key}={value}'")
    return " ".join(flags)


class Builder:
    """Runs the steps one after another, timing each and keeping its peak memory."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.report: dict[str, dict[str, float]] = {}
        self.env = go_env()

    def step(self, name: str, args: list[str], cwd: Path) -> str:
        print(f"realcluster build: {name} …", file=sys.stderr, flush=True)
        started = time.monotonic()
        proc = subprocess.run(args, cwd=cwd, env=self.env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BuildError(f"{name} failed (exit {proc.returncode}) in {cwd}:\n{tail}")
        self.report[name] = {"seconds": round(seconds, 1), "peak_rss_mib_so_far": round(peak_mib)}
        print(f"realcluster build: {name} done in {seconds:.0f} s", file=sys.stderr, flush=True)
        return proc.stdout

    def module_dir(self, wrapper: Path, module: str) -> Path:
        """Where the module cache holds the source of `module` at the version the wrapper requires (found
        by path: `go list -m` would ask the proxy for the version's .info, which it refuses for some)."""
        escaped = re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)
        version = required_version(wrapper, module)
        replaced = re.search(
            rf"^replace\s+{re.escape(module)}\s+=>\s+\S+\s+(v\S+)", (wrapper / "go.mod").read_text(), re.M
        )
        folder = Path(self.env["GOMODCACHE"]) / f"{escaped}@{replaced.group(1) if replaced else version}"
        if not folder.is_dir():
            raise BuildError(f"{module}@{version}: not in the module cache ({folder})")
        return folder

    def build_all(self) -> None:
        bin_dir = self.out / "bin"
        k8s = GO_DIR / "k8s"
        version = required_version(k8s, "k8s.io/kubernetes")
        packages = [f"k8s.io/kubernetes/cmd/{c}" for c in K8S_COMMANDS]
        build = ["go", "build", "-p", "2", "-tags=notest", f"-ldflags={k8s_ldflags(version)}", "-o", f"{bin_dir}/"]
        self.step(f"kubernetes {version}", [*build, *packages], k8s)
        self.step(
            "etcd",
            ["go", "build", "-ldflags=-s -w", "-o", str(bin_dir / "etcd"), "go.etcd.io/etcd/server/v3"],
            GO_DIR / "etcd",
        )
        kwok = GO_DIR / "kwok"
        self.step(
            "kwok", ["go", "build", "-ldflags=-s -w", "-o", str(bin_dir / "kwok"), f"{KWOK_MODULE}/cmd/kwok"], kwok
        )
        helm = GO_DIR / "helm"
        helm_version = required_version(helm, HELM_MODULE)
        self.step(
            f"helm {helm_version}",
            [
                "go", "build", f"-ldflags=-s -w -X {HELM_MODULE}/internal/version.version={helm_version}",
                "-o", str(bin_dir / "helm"), f"{HELM_MODULE}/cmd/helm",
            ],
            helm,
        )  # fmt: skip
        kwok_src = self.module_dir(kwok, KWOK_MODULE)
        copy_tree(kwok_src / "kustomize" / "stage", self.out / "kwok" / "stage")
        copy_tree(kwok_src / "kustomize" / "crd", self.out / "kwok" / "crd")
        for release in operator_releases():
            wrapper = GO_DIR / f"operator-{release}"
            target = self.out / "bin" / f"gpu-operator-{release}"
            exported = export_source(wrapper) if source_commit(wrapper) else None
            modfile = self.modfile(wrapper, exported) if exported else []
            self.step(
                f"gpu-operator {release}",
                ["go", "build", *modfile, "-ldflags=-s -w", "-o", str(target), f"{OPERATOR_MODULE}/cmd/gpu-operator"],
                wrapper,
            )
            source = exported or self.module_dir(wrapper, OPERATOR_MODULE)  # in the module cache once built
            opt = self.out / "operator" / release / "opt"
            copy_tree(source / "assets", opt)
            copy_tree(source / "manifests", opt / "manifests")
            crds = self.out / "operator" / release / "crds"
            crds.mkdir(parents=True, exist_ok=True)
            for crd in sorted((source / "deployments" / "gpu-operator" / "crds").glob("nvidia.com_*.yaml")):
                shutil.copyfile(crd, crds / crd.name)

    def modfile(self, wrapper: Path, source: Path) -> list[str]:
        """`-modfile` of a wrapper built from an exported tree: its go.mod plus a replace, its go.sum as it is."""
        folder = self.out / "modfile" / wrapper.name
        folder.mkdir(parents=True, exist_ok=True)
        text = (wrapper / "go.mod").read_text()
        (folder / "go.mod").write_text(f"{text.rstrip()}\n\nreplace {OPERATOR_MODULE} => {source}\n")
        shutil.copyfile(wrapper / "go.sum", folder / "go.sum")
        return [f"-modfile={folder / 'go.mod'}"]


def copy_tree(source: Path, target: Path) -> None:
    """Copies a module-cache folder (read-only files) into a writable one."""
    shutil.copytree(source, target, dirs_exist_ok=True, copy_function=shutil.copyfile)


def build() -> Built:
    """The built lane, building it first when this key has not been built yet."""
    if shutil.which("go") is None:
        raise BuildError("go is not installed: the real-cluster lane builds its binaries from Go modules")
    out = CACHE_ROOT / cache_key()
    if (out / ".complete").is_file():
        return Built(out)
    out.mkdir(parents=True, exist_ok=True)
    builder = Builder(out)
    started = time.monotonic()
    builder.build_all()
    builder.report["total"] = {
        "seconds": round(time.monotonic() - started, 1),
        "peak_rss_mib_so_far": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }
    (out / "build-report.json").write_text(json.dumps({"go": go_version(), "steps": builder.report}, indent=2) + "\n")
    (out / ".complete").touch()
    return Built(out)


def main() -> int:
    for release, why in unbuilt_releases().items():
        print(f"realcluster build: {release} LEFT OUT: {why}", file=sys.stderr)
    try:
        built = build()
    except BuildError as error:
        print(f"realcluster build: {error}", file=sys.stderr)
        return 1
    print(built.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
