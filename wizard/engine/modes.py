"""The three driver modes; a dependency-free module so the command line can name them cheaply."""

from enum import StrEnum


class Mode(StrEnum):
    """How the driver reaches the node."""

    PRECOMPILED = "precompiled"
    """A driver image built for the node's exact kernel (immutable OSes such as SLE Micro)."""
    PREINSTALLED = "preinstalled"
    """A driver already installed on the host: ``driver.enabled=false``."""
    UPSTREAM = "upstream"
    """NVIDIA's driver image, compiling the module on the node."""
