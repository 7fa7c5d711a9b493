"""What each kind of input file may hold (:class:`Limits`, one per kind) and the one error a reader raises."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """How much of one kind of file the wizard reads; the defaults suit a small configuration file."""

    kind: str = "a configuration file"
    """What the file is, with its article, for messages: "a NodeList", "an answers file"."""
    max_bytes: int = 1 << 20
    max_lines: int = 500
    max_line_chars: int = 1024
    max_comment_chars: int = 64 << 10
    max_depth: int = 16
    max_nodes: int = 256
    """Values, keys included (a YAML node, a JSON value or key)."""
    max_scalar_chars: int = 512
    max_number_chars: int = 32
    read_seconds: float = 1.0
    """How long a pipe or device may take to send the whole file."""


ANSWERS = Limits(kind="an answers file")
"""A few dozen lines, parsed by the round-trip loader (comments kept): the defaults."""
NODELIST = Limits(
    kind="a NodeList",
    max_bytes=256 << 20,
    max_lines=16_000_000,
    max_line_chars=512 << 10,
    max_comment_chars=1 << 20,
    max_depth=32,
    max_nodes=16_000_000,
    max_scalar_chars=256 << 10,
)
"""``kubectl get nodes -o json|yaml``: a GPU node with NFD's labels, 40 images and its managedFields
(~12 levels deep) is 20–30 KB as kubectl indents it and ~900 values, so this holds about 10,000
nodes; annotations hold at most 256 KiB in all (the API server's own limit), which bounds a string."""
SCENARIO = Limits(
    kind="a demo scenario",
    max_lines=20_000,
    max_line_chars=4096,
    max_depth=16,
    max_nodes=100_000,
    max_scalar_chars=64 << 10,
)
"""A demo scenario: nodes by ``count:`` or ``nodelist:``, a few pages of YAML at most."""
KUBECONFIG = Limits(
    kind="a kubeconfig",
    max_bytes=8 << 20,
    max_lines=200_000,
    max_line_chars=2 << 20,
    max_comment_chars=1 << 20,
    max_depth=16,
    max_nodes=200_000,
    max_scalar_chars=2 << 20,
)
"""Hundreds of clusters with base64 certificate bundles (one line each, a few KiB, more for a CA bundle)."""
BACKUP = Limits(
    kind="a backup",
    max_lines=100_000,
    max_line_chars=64 << 10,
    max_comment_chars=64 << 10,
    max_depth=64,
    max_nodes=200_000,
    max_scalar_chars=256 << 10,
)
"""What ``gpu-wizard apply`` wrote: a ClusterPolicy and a few NVIDIADrivers (tens of KiB, under 15 levels)."""
AUTH_FILE = Limits(kind="an auth file", max_depth=16, max_nodes=100_000, max_scalar_chars=64 << 10)
"""A registry auth file (docker's ``config.json``, containers' ``auth.json``): credentials per registry."""
CERTIFICATE = Limits(kind="a certificate file (PEM)", max_bytes=1 << 20)
"""A CA bundle, client certificate or key: PEM text, read whole (only its size and time are bounded)."""
REGISTRIES_CONF = Limits(
    kind="a registries.conf",
    max_lines=100_000,
    max_line_chars=4096,
    max_depth=16,
    max_nodes=100_000,
    max_scalar_chars=4096,
)
"""containers-registries.conf(5) (TOML): registries, their mirrors and prefixes."""

CHART_YAML = Limits(kind="a Helm chart's Chart.yaml", max_bytes=64 << 10, max_lines=2000, max_nodes=4096)
"""A local chart's ``Chart.yaml`` (``--chart``): its name, version and appVersion, a few dozen lines."""

RENDERED_CHART = Limits(
    kind="helm template's output",
    max_bytes=16 << 20,
    max_lines=500_000,
    max_line_chars=1 << 20,
    max_comment_chars=1 << 20,
    max_depth=64,
    max_nodes=1_000_000,
    max_scalar_chars=1 << 20,
)
"""What ``helm template`` prints for the operator's chart (``gpu-wizard bundle`` checks the values with it): the
operator's objects and its operands' ConfigMaps, a few hundred KiB; a chart of the user's may carry more."""


class InputError(ValueError):
    """The file cannot be used: ``str()`` is one line, ``source:line: field: message``."""

    def __init__(self, message: str, line: int | None = None, field: str = "", source: str = "") -> None:
        self.message, self.line, self.field, self.source = message, line, field, source
        super().__init__(self.render())

    def render(self) -> str:
        where = (
            f"{self.source}:{self.line}: " if self.source and self.line else (f"{self.source}: " if self.source else "")
        )
        return f"{where}{self.field}: {self.message}" if self.field else f"{where}{self.message}"

    def at(self, source: str) -> InputError:
        """The same error, naming the file."""
        return type(self)(self.message, self.line, self.field, source)


class BoundsError(InputError):
    """The text breaks a bound (rather than being unreadable or malformed)."""
