"""What a registry check answers (:class:`TagStatus`) and how its failures are worded (:class:`RegistryError`)."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Literal


class RegistryError(Exception):
    """A registry problem worded for the user; the message never contains a credential."""


@dataclass(frozen=True)
class TagStatus:
    """What the registry said about one image reference.

    ``exists`` False with an empty ``error`` means the registry answered that the tag is missing;
    a non-empty ``error`` means the question could not be answered (auth, network, server).
    """

    reference: str
    exists: bool
    digest: str = ""
    media_type: str = ""
    error: str = ""

    @property
    def state(self) -> Literal["present", "missing", "error"]:
        """``present``, ``missing`` (the registry said so) or ``error`` (unknown)."""
        if self.error:
            return "error"
        return "present" if self.exists else "missing"


def os_reason(error: OSError) -> str:
    """A short reason for a failed connection, without the address tuple Python adds."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(error, socket.gaierror):
        return "host name does not resolve"
    return error.strerror or type(error).__name__
