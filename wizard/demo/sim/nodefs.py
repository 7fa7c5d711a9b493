"""The files and directories a simulated node (or container) shows to ``cat``, ``grep``, ``test`` and ``ls``."""

from __future__ import annotations

import posixpath

from wizard.demo.rules.hostos import os_release
from wizard.demo.sim.world import NodeView

HOST_DIRS = (
    "/",
    "/bin",
    "/dev",
    "/etc",
    "/etc/containerd",
    "/home",
    "/lib",
    "/lib/modules",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/local/bin",
    "/usr/sbin",
    "/var",
    "/var/lib",
    "/var/lib/kubelet",
    "/var/log",
)


def _cri_plugin(runtime: str) -> tuple[int, str]:
    """containerd config version and CRI plugin key for the node's containerd."""
    version = runtime.split("://", 1)[-1]
    if version.startswith("2."):
        return 3, "io.containerd.cri.v1.runtime"
    return 2, "io.containerd.grpc.v1.cri"


def drop_in(view: NodeView) -> str:
    """The containerd drop-in the toolkit writes (``BinaryName`` on its 12th line)."""
    config_version, plugin = _cri_plugin(view.spec.runtime)
    base = f"{view.toolkit_install_dir}/toolkit"
    return (
        f"version = {config_version}\n"
        "\n"
        f'[plugins."{plugin}"]\n'
        "  enable_cdi = true\n"
        "\n"
        f'  [plugins."{plugin}".containerd]\n'
        "\n"
        f'    [plugins."{plugin}".containerd.runtimes.nvidia]\n'
        '      runtime_type = "io.containerd.runc.v2"\n'
        "\n"
        f'      [plugins."{plugin}".containerd.runtimes.nvidia.options]\n'
        f'        BinaryName = "{base}/nvidia-container-runtime"\n'
        "\n"
        f'    [plugins."{plugin}".containerd.runtimes.nvidia-cdi]\n'
        '      runtime_type = "io.containerd.runc.v2"\n'
        "\n"
        f'      [plugins."{plugin}".containerd.runtimes.nvidia-cdi.options]\n'
        f'        BinaryName = "{base}/nvidia-container-runtime.cdi"\n'
        "\n"
        f'    [plugins."{plugin}".containerd.runtimes.nvidia-legacy]\n'
        '      runtime_type = "io.containerd.runc.v2"\n'
        "\n"
        f'      [plugins."{plugin}".containerd.runtimes.nvidia-legacy.options]\n'
        f'        BinaryName = "{base}/nvidia-container-runtime.legacy"\n'
    )


def driver_ready_file(view: NodeView) -> str:
    """``/run/nvidia/validations/driver-ready`` as the validator writes it."""
    if view.host_driver_ok and view.driver_pod is None:
        root, ctr = "/", "/host"
    else:
        root, ctr = view.driver_install_dir, "/driver-root"
    return (
        f"IS_HOST_DRIVER={'true' if root == '/' else 'false'}\n"
        f"NVIDIA_DRIVER_ROOT={root}\nDRIVER_ROOT_CTR_PATH={ctr}\nNVIDIA_DEV_ROOT={root}\nDEV_ROOT_CTR_PATH={ctr}\n"
    )


#: (name, size, used by) of the modules a Kubernetes node's kubelet, kube-proxy and CNI load after boot, newest first.
_KUBERNETES_MODULES = (
    ("xt_nat", 16384, ()),
    ("xt_MASQUERADE", 16384, ()),
    ("veth", 40960, ()),
    ("nf_conntrack_netlink", 53248, ()),
    ("xt_addrtype", 16384, ()),
    ("br_netfilter", 32768, ()),
    ("bridge", 421888, ("br_netfilter",)),
    ("overlay", 196608, ()),
    ("xt_conntrack", 16384, ()),
    ("nf_nat", 57344, ("xt_nat", "xt_MASQUERADE")),
    ("nf_conntrack", 184320, ("xt_conntrack", "nf_nat", "xt_nat", "nf_conntrack_netlink", "xt_MASQUERADE")),
    ("nf_defrag_ipv6", 24576, ("nf_conntrack",)),
    ("nf_defrag_ipv4", 12288, ("nf_conntrack",)),
)
_NVIDIA_MODULES = (
    ("nvidia_uvm", 4956160, ()),
    ("nvidia_modeset", 1720320, ()),
    ("nvidia", 11571200, ("nvidia_uvm", "nvidia_modeset")),
)
_NOUVEAU_MODULES = (
    ("nouveau", 3096576, ()),
    ("mxm_wmi", 12288, ("nouveau",)),
    ("drm_ttm_helper", 12288, ("nouveau",)),
    ("ttm", 110592, ("drm_ttm_helper", "nouveau")),
)
_BOOT_MODULES = (
    ("drm_kms_helper", 274432, ()),
    ("drm", 741376, ("drm_kms_helper",)),
    ("nvme", 61440, ()),
    ("nvme_core", 225280, ("nvme",)),
    ("crc32_pclmul", 12288, ()),
)


def modules(view: NodeView) -> list[tuple[str, int, tuple[str, ...]]]:
    """The node's loaded modules, newest first, as ``/proc/modules`` lists them."""
    spec = view.spec
    out: list[tuple[str, int, tuple[str, ...]]] = []
    if view.driver_loaded and not view.host_driver_ok:  # the driver container loads its modules last
        out += _NVIDIA_MODULES
    out += _KUBERNETES_MODULES
    if view.host_driver_ok:  # a host driver loads at boot
        out += _NVIDIA_MODULES
    if spec.nouveau:
        out += _NOUVEAU_MODULES
    return out + list(_BOOT_MODULES)


def proc_modules(view: NodeView) -> str:
    """``/proc/modules``: ``name size refcount users, Live address`` per module, the newest first."""
    return "".join(
        f"{name} {size} {len(users)} {''.join(u + ',' for u in users) or '-'} Live 0x0000000000000000\n"
        for name, size, users in modules(view)
    )


def host_files(view: NodeView) -> dict[str, str]:
    """Every file the host shows, path -> content (worked out once per view: do not mutate it)."""
    found: dict[str, str] | None = view.memo.get("host_files")
    if found is None:
        found = view.memo["host_files"] = _host_files(view)
    return found


def _host_files(view: NodeView) -> dict[str, str]:
    spec = view.spec
    files = {
        "/etc/os-release": os_release(spec.os_id, spec.os_version),
        "/etc/hostname": f"{spec.name}\n",
        "/proc/modules": proc_modules(view),
        "/proc/version": f"Linux version {spec.kernel} (geeko@buildhost) (gcc (SUSE Linux) 7.5.0) #1 SMP\n",
        "/etc/containerd/config.toml": f"version = {_cri_plugin(spec.runtime)[0]}\n"
        + ('imports = ["/etc/containerd/conf.d/*.toml"]\n' if view.toolkit_installed else ""),
    }
    files.update(runtime_files(view))
    version = view.driver_version
    if version:
        files["/proc/driver/nvidia/version"] = (
            f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  "
            "(dvs-builder@U22-I3-AE18-09-3)  Wed Jan  7 22:59:30 UTC 2026\nGCC version:  gcc version 12.3.0\n"
        )
    if view.toolkit_installed:
        files[view.drop_in_path] = drop_in(view)
        files["/run/nvidia/toolkit/toolkit.pid"] = "4242\n"
    if view.driver_loaded:
        files["/run/nvidia/validations/.driver-ctr-ready"] = ""
        files[f"{view.driver_install_dir}/usr/bin/nvidia-smi"] = "\x7fELF"
    if view.validated("driver"):
        files["/run/nvidia/validations/driver-ready"] = driver_ready_file(view)
    for component in ("toolkit", "cuda", "plugin"):
        if view.validated(component):
            files[f"/run/nvidia/validations/{component}-ready"] = ""
    if spec.host_driver:
        files["/usr/bin/nvidia-smi"] = "\x7fELF"
    return files


def runtime_files(view: NodeView) -> dict[str, str]:
    """The config a distribution generates for its own containerd (RKE2, k3s, k0s, MicroK8s): its imports and,
    where the distribution found the toolkit in ``/usr/local/nvidia`` itself, its ``nvidia`` runtime."""
    where = view.runtime_layout
    if where.config == "/etc/containerd/config.toml" or not where.socket:
        return {}
    config_version, plugin = _cri_plugin(view.spec.runtime)
    text = f"# generated by {where.flavour}\nversion = {config_version}\n"
    if where.import_dirs:
        text += "imports = [" + ", ".join(f'"{d}/*.toml"' for d in where.import_dirs) + "]\n"
    if where.detects_toolkit and view.toolkit_installed and view.toolkit_install_dir == "/usr/local/nvidia":
        text += (
            f'\n[plugins."{plugin}".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
            f'[plugins."{plugin}".containerd.runtimes.nvidia.options]\n'
            '  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n'
        )
    return {where.config: text}


def host_dirs(view: NodeView) -> set[str]:
    """Every directory the host shows (worked out once per view: do not mutate it)."""
    found: set[str] | None = view.memo.get("host_dirs")
    if found is None:
        found = view.memo["host_dirs"] = _host_dirs(view)
    return found


def _host_dirs(view: NodeView) -> set[str]:
    dirs = set(HOST_DIRS) | {f"/lib/modules/{view.spec.kernel}"}
    if view.spec.kernel_headers:  # the headers package links build/ to the kernel's source tree
        dirs.add(f"/lib/modules/{view.spec.kernel}/build")
    for path in host_files(view):
        parent = posixpath.dirname(path)
        while parent not in dirs:
            dirs.add(parent)
            parent = posixpath.dirname(parent)
    if view.driver_pod is not None or view.toolkit_pod is not None:
        dirs |= {"/run/nvidia", "/run/nvidia/validations"}
    if view.driver_loaded:
        dirs.add(view.driver_install_dir)
    if view.toolkit_installed:
        dirs |= {view.toolkit_install_dir, f"{view.toolkit_install_dir}/toolkit"}
    return dirs


def container_files(os_id: str, os_version: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A container image's files (its own os-release)."""
    files = {"/etc/os-release": os_release(os_id, os_version), "/etc/hostname": "container\n"}
    files.update(extra or {})
    return files
