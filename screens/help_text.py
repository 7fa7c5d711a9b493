"""Words shown by the wizard: F1 help per step, the mode comparison and the driver-source diagrams.

Kept apart from the screens so the text can be reviewed as text. Facts follow
``gpu-operator-facts.md`` (image naming §1, repoConfig §3, host driver §4, toolkit paths §8).
"""

from __future__ import annotations

from screens.keys import help_keys
from wizard.engine import steps

KEYS = help_keys(web=False)
"""The *Keys* paragraph of F1 help in a terminal (see :mod:`screens.keys`)."""

MODE_SUMMARY: dict[str, str] = {
    "precompiled": "image built for each kernel; nothing is compiled on the node",
    "upstream": "NVIDIA's image compiles the driver on each node",
    "preinstalled": "the host already runs a driver; the operator leaves it alone",
}

MODE_DIAGRAM: dict[str, str] = {
    "precompiled": (
        "registry ── <image>:<version>-<kernel>-<os> ──▶ driver pod ──▶ node\n"
        "            one image per (kernel, OS) group, module ready-built"
    ),
    "upstream": (
        "registry ── <image>:<version>-<os> ──▶ driver pod ── compiles ──▶ node\n"
        "package repos ── kernel headers ──┘ (air-gapped: repoConfig)"
    ),
    "preinstalled": (
        "OS image or packages ── driver on the host ──────────────▶ node\n"
        "operator: driver.enabled=false; toolkit and device plugin only"
    ),
}

#: The comparison per mode, as (aspect, text) rows short enough for an 80-column terminal.
MODE_FACTS: dict[str, tuple[tuple[str, str], ...]] = {
    "precompiled": (
        ("Automation", "the operator rolls one image per kernel onto each node"),
        ("Control", "exact images, checked by digest; nothing built on the node"),
        ("Needs", "a published tag for every kernel (mirrored if air-gapped)"),
        ("Choose when", "immutable OS (SLE Micro), air-gapped, reproducible installs"),
    ),
    "upstream": (
        ("Automation", "most: the driver pod compiles for whatever kernel it finds"),
        ("Control", "least: the build happens live on each node"),
        ("Needs", "kernel headers from package repos (air-gapped: repoConfig)"),
        ("Choose when", "mutable OS with repo access, kernels nobody publishes"),
    ),
    "preinstalled": (
        ("Automation", "none for the driver: you install and upgrade it on the host"),
        ("Control", "full: the operator never touches the host driver"),
        ("Needs", "a working nvidia-smi on every GPU node"),
        ("Choose when", "the driver is baked into the OS image, strict host policy"),
    ),
}

MODE_COMPARISON = """
| | Precompiled | Upstream | Pre-installed |
|---|---|---|---|
| Who builds the module | NVIDIA/SUSE, ahead of time | the driver pod, on the node | you (OS image or packages) |
| Automation | operator rolls images per kernel | operator compiles for any kernel | none for the driver |
| Control | exact, digest-checked images | version only; build happens live | full: you own the host driver |
| Needs | a published tag per kernel | kernel headers, compiler, repo access | a working `nvidia-smi` on the host |
| Kernel upgrade | mirror the new tag first | rebuilds by itself | upgrade the host driver yourself |
| Choose when | immutable OS (SLE Micro), air-gapped with a mirror, reproducibility | mutable OS with repo access, unusual kernels | driver baked into the image, strict host policy |

**Upstream is configurable, not validated in this release**: gpu-wizard renders and applies it, but
its end-to-end verification is not part of this release's test matrix.

**Pre-installed is what NVIDIA's documents call `operatortype=preinstalled`**: the same thing, the
host's own driver with `driver.enabled=false`. An answers file may say `operatortype: preinstalled`
(saved back as `mode: preinstalled`); nothing named operatortype goes into the ClusterPolicy (the CRD
has no such field). The driver must load at boot (dkms or the OS's init scripts), or a node comes back
from a reboot without it. Before the operator labels the nodes, the Nodes step's host check (it starts by
itself once the nodes are known) runs `nvidia-smi` on each host to find such a driver.
"""

HELP: dict[str, str] = {
    steps.CONNECT.name: """
# Connect

Pick the kube **context** of the cluster to install on. gpu-wizard then runs a **preflight**:

* **permissions** — can you read nodes, create ClusterPolicy/NVIDIADriver, read pods and exec into them?
* **operator** — is the GPU Operator running, which release, in which namespace? None yet: gpu-wizard
  **installs it with your choices** (a Helm release whose values are your plan, never the chart's defaults).
* **CRDs** — are `clusterpolicies.nvidia.com` and `nvidiadrivers.nvidia.com` registered?

Each failure says what to do. No cluster at hand? **Try the demo cluster** (simulated, marked *DEMO*).
""",
    steps.NODES.name: """
# Nodes

Every GPU node, grouped by **(kernel, OS tag)**: the operator needs one driver image per group.

* **Facts from** — `nfd` when Node Feature Discovery labels are present (what the operator itself reads),
  `nodeInfo` when only `status.nodeInfo` is (kernel and OS parsed from it).
* **Driver label** — `nvidia.com/gpu.deploy.driver`: `true` (operator driver), `pre-installed` (a host driver
  was found), `false`.

The table follows the cluster live (a watch): nodes that join or change appear here.
""",
    steps.MODE.name: "# Mode\n\nHow the NVIDIA driver reaches the nodes. The recommended mode is preselected; the reason is "
    "shown under the choices.\n" + MODE_COMPARISON,
    steps.DRIVER.name: """
# Driver & registry

* **Version** — the driver version only (`580.126.09.1`, or a branch such as `580`). Never add a kernel or
  OS suffix: the operator appends it (operator issue #1200). ✓ *validated* versions were tested for your
  kernel and OS; *published* ones exist in the catalog.
* **Source → target** — the mirror copies from the source registry to the target the cluster pulls from.
* **Images** — per (kernel, OS) group, the exact tag and whether the target has it (with its digest),
  lacks it, or only the source has it (mirror it).
* **Mirror** — the `skopeo copy --all --preserve-digests` commands; run them here when skopeo is installed.
* **NVIDIADriver CRD** — one NVIDIADriver resource instead of ClusterPolicy's driver section: needed when
  GPU nodes run different OSes (ClusterPolicy takes one OS tag for the whole cluster).
* **Air-gapped / repoConfig** (upstream) — the ConfigMap of package-repository files for kernel headers.

A kernel with no published image gets a **support request** text to send to NVIDIA/SUSE.
""",
    steps.PATHS.name: """
# Paths

* **toolkit installDir** — where the container toolkit installs on the host. Default `/usr/local/nvidia`;
  on immutable OSes (SLE Micro, Talos, Flatcar) `/usr/local` is read-only, so `/run/nvidia/toolkit-install`.
* **driverInstallDir** — `hostPaths.driverInstallDir`, default `/run/nvidia/driver`. Change it only for a host
  driver in a non-standard root.

Paths must be absolute and normalised. **Check on nodes** runs a short-lived probe pod on each GPU node, before
anything is applied: the folder exists (or can be created under its nearest parent), is writable, and is not
mounted `noexec` (the toolkit's runtime and the driver must execute from there).

**Container runtime** — the toolkit adds an `nvidia` runtime to the node's containerd. RKE2, k3s, k0s and
MicroK8s run their own containerd with its own socket and config, so the toolkit needs `toolkit.env`
(`CONTAINERD_SOCKET`, `CONTAINERD_CONFIG`, `RUNTIME_CONFIG_SOURCE`, `RUNTIME_DROP_IN_CONFIG`); without it the
toolkit pod fails to signal containerd or writes a drop-in nobody reads (operator issues #473, #522, #1694).
gpu-wizard reads the flavour from each GPU node's kubelet and runtime versions and labels; plain containerd
and CRI-O need nothing. Override in the answers file: `toolkit: {runtime: k3s}` names the flavour,
`toolkit: {env: {NAME: value}}` replaces the settings (an empty `env: {}` sends none). Verification reads
`BinaryName` from the drop-in where that env puts it.
""",
    steps.PREVIEW.name: """
# Preview

Everything gpu-wizard will send, before anything is sent:

* **ClusterPolicy / NVIDIADriver** — the resources, as YAML.
* **Mirror** — the copy plan for the driver images.
* **Helm values** — the same choices as `helm install` values, for GitOps.
* **Diff** — what changes against the live objects.

The **server dry-run** validates the objects on the API server without persisting them. Warnings explain
what may go wrong and why. **Save** writes the manifests to a file. **Save GitOps bundle…** (in the palette,
^p) writes the plan for Helm, helmfile, Argo CD or Flux into a new folder: the same chart and values an install
uses, the image lists, a README, SHA256SUMS, and the blocking findings in FINDINGS.
""",
    steps.APPLY.name: """
# Apply

Applies the resources with server-side apply after a confirmation naming the cluster and context. The live
objects are **backed up** first (the path is shown). Then the operator reconciles: the driver DaemonSets roll
out and each node walks through the upgrade states (`upgrade-required` … `upgrade-done`).

**When no operator runs yet**, **Install…** installs the release's chart as Helm release `gpu-operator` with
your plan's values (the confirmation names release, namespace, chart and images): through `helm upgrade
--install` when `helm` is on PATH, else the page shows that command to run and waits for the operator.

**When a Helm release owns the ClusterPolicy**, a direct apply would be reverted by the next `helm upgrade`
(Helm puts the chart's values back). With `helm` on PATH, **Run helm upgrade…** upgrades the release with the
change itself (confirmed first; backup, the leftover driver DaemonSets deleted, the rollout followed; undo with
`helm rollback`, then `kubectl label` to give the nodes kept out of the driver rollout their labels back). **Save Helm values** writes the change as the release's values (the
page shows the exact `helm upgrade … --reuse-values -f FILE`); **Copy helm command** saves them too and hands
the command to the terminal's clipboard (OSC 52: tmux passes it on only with `set -g set-clipboard on`);
**Apply directly…** asks first, naming that risk. Until the `helm upgrade` has run, Verify says so rather than
checking nodes against images nobody asked for. When OLM created the policy, the summary says what OLM may do.

**Verify without an apply**: when no driver image changes (the live objects already ask for the plan's images),
Next goes to Verify at once, and the live rollout's state is shown (a failure with its cause and fix).

**When a policy already runs**, the **upgrade plan** below shows each node group's image now and after (with
the registry's answer for both), the OS-tag changes, the GPU pods the upgrade evicts, the estimated time, and
an upgrade still under way. **Edit upgrade policy…** sets `maxParallelUpgrades`, `maxUnavailable`, drain and
the timeouts, checked like the answers file.
""",
    steps.VERIFY.name: """
# Verify

Proves the driver works, node by node:

* **image** — the driver container runs the expected image, and its **imageID digest** matches the registry.
* **nvidia-smi** — run in the driver container (or on the host for a pre-installed driver); ✓ with the driver
  version and GPUs, ✗ with the reason.

First it reads whether the live objects ask for the plan's driver: if not (the plan was never applied, or a
Helm release's `helm upgrade` has not run yet), it says what they still ask for and what to run first —
nodes judged against images nobody asked for would all fail. After a failure, the diagnosis names the known
cause on the failing nodes and its fix. Ctrl+Q while it runs asks first.

The log shows one line per result (the last 2,000); **Save log** writes all of them and the raw output to
the state folder. **Export** writes the report as Markdown and JSON.
""",
}


def step_help(step: str, *, web: bool = False) -> str:
    """F1 text of a step, with the key summary (the browser's keys in web mode)."""
    return HELP.get(step, "") + "\n" + help_keys(web=web)
