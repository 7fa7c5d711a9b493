"""What a simulated node's operating system looks like from a shell: os-release and mounts."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

_NAMES: dict[str, tuple[str, str, str]] = {
    # ID: (NAME, PRETTY_NAME template, extra lines template)
    "ubuntu": (
        "Ubuntu",
        "Ubuntu {full} LTS",
        'VERSION="{full} LTS ({codename_long})"\nID_LIKE=debian\nHOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\nBUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\n'
        "VERSION_CODENAME={codename}\nUBUNTU_CODENAME={codename}\n",
    ),
    "rhel": (
        "Red Hat Enterprise Linux",
        "Red Hat Enterprise Linux {version} (Plow)",
        'VERSION="{version} (Plow)"\nID_LIKE="fedora"\nPLATFORM_ID="platform:el{major}"\nANSI_COLOR="0;31"\n'
        'LOGO="fedora-logo-icon"\nCPE_NAME="cpe:/o:redhat:enterprise_linux:{major}::baseos"\n'
        'HOME_URL="https://www.redhat.com/"\nBUG_REPORT_URL="https://issues.redhat.com/"\n',
    ),
    "rocky": (
        "Rocky Linux",
        "Rocky Linux {version} (Blue Onyx)",
        'VERSION="{version} (Blue Onyx)"\nID_LIKE="rhel centos fedora"\nPLATFORM_ID="platform:el{major}"\n'
        'HOME_URL="https://rockylinux.org/"\n',
    ),
    "sle-micro": (
        "SLE Micro",
        "SUSE Linux Enterprise Micro {version}",
        'VERSION="{version}"\nID_LIKE="suse"\nANSI_COLOR="0;32"\nCPE_NAME="cpe:/o:suse:sle-micro:{version}"\n',
    ),
    "sl-micro": (
        "SL-Micro",
        "SUSE Linux Micro {version}",
        'VERSION="{version}"\nID_LIKE="suse"\nANSI_COLOR="0;32"\nCPE_NAME="cpe:/o:suse:sl-micro:{version}"\n',
    ),
    "sles": (
        "SLES",
        "SUSE Linux Enterprise Server {sles_pretty}",
        'VERSION="{sles}"\nID_LIKE="suse"\nANSI_COLOR="0;32"\nCPE_NAME="cpe:/o:suse:sles:{major}:sp{minor}"\n',
    ),
}
_UBUNTU_CODENAMES = {"20.04": "focal", "22.04": "jammy", "24.04": "noble"}
_UBUNTU_NAMES = {"focal": "Focal Fossa", "jammy": "Jammy Jellyfish", "noble": "Noble Numbat"}
_UBUNTU_POINT = {"20.04": "20.04.6", "22.04": "22.04.5", "24.04": "24.04.2"}


def _fields(os_id: str, version: str) -> dict[str, str]:
    major, _, minor = version.partition(".")
    return {
        "version": version,
        "major": major,
        "minor": minor or "0",
        "full": _UBUNTU_POINT.get(version, version),
        "codename": _UBUNTU_CODENAMES.get(version, "jammy"),
        "codename_long": _UBUNTU_NAMES[_UBUNTU_CODENAMES.get(version, "jammy")],
        "sles": f"{major}-SP{minor}" if minor and minor != "0" else major,
        "sles_pretty": f"{major} SP{minor}" if minor and minor != "0" else major,
    }


def pretty_name(os_id: str, version: str) -> str:
    """PRETTY_NAME of ``/etc/os-release``, which kubelet reports as ``status.nodeInfo.osImage``."""
    known = _NAMES.get(os_id)
    if known is None:
        return f"{os_id.capitalize()} {version}"
    return known[1].format(**_fields(os_id, version))


def os_release(os_id: str, version: str) -> str:
    """The full ``/etc/os-release`` of an OS, as ``cat`` prints it."""
    fields = _fields(os_id, version)
    known = _NAMES.get(os_id)
    if known is None:
        return f'NAME="{os_id}"\nVERSION="{version}"\nID={os_id}\nVERSION_ID="{version}"\nPRETTY_NAME="{pretty_name(os_id, version)}"\n'
    name, _, extra = known
    head = f'NAME="{name}"\n'
    body = f'ID="{os_id}"\nVERSION_ID="{version}"\nPRETTY_NAME="{pretty_name(os_id, version)}"\n'
    if os_id == "ubuntu":
        body = f'PRETTY_NAME="{pretty_name(os_id, version)}"\nNAME="Ubuntu"\nVERSION_ID="{version}"\nID=ubuntu\n'
        return body + extra.format(**fields)
    return head + body + extra.format(**fields)


@dataclass(frozen=True)
class Mount:
    """One line of the node's mount table."""

    target: str
    source: str
    fstype: str
    options: str

    @property
    def writable(self) -> bool:
        return self.options.split(",", 1)[0] == "rw"

    @property
    def noexec(self) -> bool:
        """Binaries under it cannot be executed."""
        return "noexec" in self.options.split(",")


def mounts(os_id: str, noexec: list[str]) -> list[Mount]:
    """The node's mount table (only the mount points that matter here)."""
    table: list[Mount]
    if os_id in ("sle-micro", "sl-micro"):
        table = [
            Mount(
                "/",
                "/dev/sda3[/@/.snapshots/1/snapshot]",
                "btrfs",
                "ro,relatime,ssd,space_cache=v2,subvol=/@/.snapshots/1/snapshot",
            ),
            Mount("/var", "/dev/sda3[/@/var]", "btrfs", "rw,relatime,ssd,space_cache=v2,subvol=/@/var"),
            Mount(
                "/etc",
                "overlay",
                "overlay",
                "rw,relatime,lowerdir=/sysroot/etc,upperdir=/sysroot/var/lib/overlay/1/etc",
            ),
            Mount("/opt", "/dev/sda3[/@/opt]", "btrfs", "rw,relatime,ssd,space_cache=v2,subvol=/@/opt"),
        ]
    elif os_id in ("rhel", "rocky", "ol", "centos"):
        table = [Mount("/", "/dev/mapper/rhel-root", "xfs", "rw,relatime,seclabel,attr2,inode64,logbufs=8,noquota")]
    else:
        table = [Mount("/", "/dev/sda1", "ext4", "rw,relatime,discard,errors=remount-ro")]
    table.append(Mount("/run", "tmpfs", "tmpfs", "rw,nosuid,nodev,size=26377152k,nr_inodes=819200,mode=755,inode64"))
    table.append(Mount("/dev/shm", "tmpfs", "tmpfs", "rw,nosuid,nodev,inode64"))
    for path in noexec:
        path = posixpath.normpath(path)
        existing = next((m for m in table if m.target == path), None)
        if existing is not None:
            opts = existing.options.split(",")
            opts.insert(3 if len(opts) > 3 else len(opts), "noexec")
            table[table.index(existing)] = Mount(existing.target, existing.source, existing.fstype, ",".join(opts))
        else:
            table.append(Mount(path, "tmpfs", "tmpfs", "rw,nosuid,nodev,noexec,relatime,mode=755,inode64"))
    return table


def mount_of(table: list[Mount], path: str) -> Mount:
    """The mount that holds ``path`` (longest matching mount point)."""
    path = posixpath.normpath(path) if path else "/"
    best = table[0]
    for mount in table:
        prefix = mount.target.rstrip("/") + "/"
        if (path == mount.target or path.startswith(prefix) or mount.target == "/") and len(mount.target) >= len(
            best.target
        ):
            best = mount
    return best
