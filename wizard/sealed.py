"""A classroom session's seal: no network but its own loopback services, no programs, no files but its own.

``gpu-wizard serve`` starts every session with :data:`VARIABLE` naming the session's folder (the student's
``~``; :mod:`wizard.web.environment`), and the launcher calls :func:`seal_from_environment` before it
imports anything else. One audit hook (PEP 578, :func:`sys.addaudithook`: it cannot be removed) then
sees every socket, name lookup, program start and file access of the process, whichever field,
library or thread asks, and refuses:

* **the network**: a connection or datagram to anything but a loopback port this process listens on
  itself (its demo cluster's API server, which is also its simulated registry), a listening socket
  on any non-loopback address, and every host-name lookup but ``localhost`` and numeric addresses.
  The refusal is :class:`NoNetwork`, an ``OSError`` whose text is :data:`NO_NETWORK`, so a registry
  check or a kubeconfig shows that one line where it would show "connection refused";
* **programs**: a classroom session starts none (``subprocess``, ``os.system``, ``exec``, ``fork``):
  a credential helper or ``skopeo`` would reach the network past the hook;
* **files**: writes outside the session's folder, and reads outside it and the wizard's own program
  files (the Python install, its packages, the bundled assets, the trainer's scenario file). The
  refusal is :class:`OutsideFolder` (a ``PermissionError`` with :data:`OUTSIDE`), raised before
  the operating system is asked, so ``/etc/passwd``, a folder, a missing file and ``../..`` all get
  the same line: a student learns nothing about the server's files.

``GPU_WIZARD_SEALED_TRACE=1`` in a session's environment writes each refusal, with where it came from,
on its stderr (the session folder's ``stderr.log``): for finding what a new library reads.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import sys
import sysconfig
import weakref
from collections.abc import Iterable
from typing import Any

VARIABLE = "GPU_WIZARD_SEALED"
"""Names the session's folder: set, the process is sealed to it (:func:`seal_from_environment`)."""

READS_VARIABLE = "GPU_WIZARD_SEALED_READS"
"""More files or folders a sealed session may read (``os.pathsep``-separated): the trainer's scenario file."""

TRACE_VARIABLE = "GPU_WIZARD_SEALED_TRACE"
"""Set: each refusal is also written on stderr (for debugging the seal)."""

NO_NETWORK = "the classroom has no network: a session reaches only its own simulated cluster and registry"
OUTSIDE = "a classroom session reads and writes only its own folder (~)"
NO_PROGRAMS = "a classroom session runs no programs"

SYSTEM_READS = ("/dev/null", "/dev/urandom", "/etc/localtime", "/usr/share/zoneinfo", "/etc/mime.types")
"""Files of the machine a library may read on its own (none says anything about the trainer)."""

_LOOKUPS = frozenset(
    {
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
        "socket.gethostbyname_ex",
    }
)
_SENDS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_PROGRAMS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"}
)
_WRITES = frozenset(
    {
        "os.mkdir",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.symlink",
        "os.link",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "shutil.rmtree",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.move",
    }
)
_LISTINGS = frozenset({"os.listdir", "os.scandir"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class NoNetwork(OSError):
    """A sealed session asked for the network."""

    def __init__(self) -> None:
        super().__init__(errno.ENETUNREACH, NO_NETWORK)


class OutsideFolder(PermissionError):
    """A sealed session asked for a file outside its folder."""

    def __init__(self) -> None:
        super().__init__(errno.EACCES, OUTSIDE)


class NoPrograms(PermissionError):
    """A sealed session asked to start a program."""

    def __init__(self) -> None:
        super().__init__(errno.EPERM, NO_PROGRAMS)


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _is_loopback(host: object) -> bool:
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


class Seal:
    """The rules of one sealed process (see the module); :meth:`hook` is the audit hook that applies them."""

    def __init__(self, folder: str, reads: Iterable[str] = ()) -> None:
        self.folder = os.path.realpath(folder)
        self.reads = tuple(dict.fromkeys(os.path.realpath(path) for path in reads if path))
        self._listening: weakref.WeakSet[Any] = weakref.WeakSet()
        """Sockets this process bound on loopback: the only ports it may connect to."""

    # -- the network ---------------------------------------------------------------------------

    def _own_port(self, port: object) -> bool:
        for sock in list(self._listening):
            try:
                if sock.getsockname()[1] == port:
                    return True
            except (OSError, IndexError, TypeError):
                continue
        return False

    def allows_address(self, address: object) -> bool:
        """A connection or datagram to ``address`` stays in the session: a loopback port it listens on."""
        if not isinstance(address, tuple) or len(address) < 2:
            return False  # a Unix socket (a daemon of the machine) or something stranger
        return _is_loopback(address[0]) and self._own_port(address[1])

    @staticmethod
    def allows_lookup(host: object) -> bool:
        """A name lookup that needs no resolver: a numeric address, ``localhost`` or none."""
        if host is None:
            return True
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        text = str(host).strip("[]").rstrip(".").lower()
        if text == "localhost":
            return True
        try:
            ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return False
        return True

    # -- files -----------------------------------------------------------------------------------

    def allows_path(self, path: object, *, write: bool) -> bool:
        """``path`` is in the session's folder, or (to read) among the program's own files."""
        if isinstance(path, int):
            return True  # an open file descriptor: whoever opened it was checked
        try:
            text = os.fsdecode(os.fspath(path))  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return False
        real = os.path.realpath(text)
        if _inside(real, (self.folder,)):
            return True
        return not write and _inside(real, self.reads)

    # -- the hook --------------------------------------------------------------------------------

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        """The audit hook: raises the refusal, or returns to let the operation go on."""
        try:
            self._check(event, args)
        except OSError:
            if os.environ.get(TRACE_VARIABLE):
                import traceback

                frames = traceback.StackSummary.extract(traceback.walk_stack(None), lookup_lines=False)
                where = " < ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in list(frames)[:8])
                os.write(2, f"sealed: refused {event} {args[:3]!r} at {where}\n".encode())
            raise

    def _check(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            write = any(c in str(mode or "") for c in "wax+") or bool((flags or 0) & _WRITE_FLAGS)
            if not self.allows_path(path, write=write):
                raise OutsideFolder
        elif event in _SENDS:
            if len(args) >= 2 and not self.allows_address(args[-1]):
                raise NoNetwork
        elif event in _LOOKUPS:
            if not self.allows_lookup(args[0] if args else None):
                raise NoNetwork
        elif event == "socket.bind":
            sock, address = args
            if isinstance(address, tuple) and len(address) >= 2:
                if not _is_loopback(address[0]):
                    raise NoNetwork
                self._listening.add(sock)
        elif event in _LISTINGS:
            if args and args[0] is not None and not self.allows_path(args[0], write=False):
                raise OutsideFolder
        elif event in _WRITES:
            if not all(self.allows_path(p, write=True) for p in args[:2] if isinstance(p, (str, bytes, os.PathLike))):
                raise OutsideFolder
        elif event in _PROGRAMS:
            raise NoPrograms


def program_reads(*extra: str) -> list[str]:
    """What a sealed session may read besides its folder: the Python install, its packages, ``extra``."""
    paths = sysconfig.get_paths()
    roots = [paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib") if name in paths]
    roots += [os.path.dirname(os.__file__)]
    roots += [
        entry for entry in sys.path if os.path.isabs(entry) and entry != os.getcwd()
    ]  # (a zip that is not there too)
    return [*roots, *SYSTEM_READS, *extra]


_installed: Seal | None = None


def seal(folder: str, reads: Iterable[str] = ()) -> Seal:
    """Seal this process to ``folder`` for the rest of its life (see the module); returns its rules."""
    global _installed
    if _installed is None:
        _installed = Seal(folder, program_reads(*reads))
        sys.addaudithook(_installed.hook)
    return _installed


def seal_from_environment(*program_files: str) -> Seal | None:
    """Seal the process when :data:`VARIABLE` says it is a classroom session; ``program_files``: its own files."""
    folder = os.environ.get(VARIABLE)
    if not folder:
        return None
    extra = [path for path in os.environ.get(READS_VARIABLE, "").split(os.pathsep) if path]
    return seal(folder, [*program_files, *extra])


def sealed() -> bool:
    """This process is a sealed classroom session."""
    return _installed is not None
