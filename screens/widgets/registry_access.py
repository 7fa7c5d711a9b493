"""The Driver step's "Registry access": the CA file to trust, and where each mirror, credential and CA came from.

Below the images: the ``driver.registryCA`` field (a private registry's CA, like ``--registry-ca``)
and, after each registry check, one line per registry saying how the check reached it and from
where: a mirror (registries.conf, containerd hosts.toml, the answers), the credentials (an auth file,
a credential helper — the user name only, never a secret), the TLS material (certs.d, hosts.toml, the
CA file) and any configuration entry that was skipped. The lines are
:class:`wizard.engine.registry_routes.AccessNote` values the registry client builds.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from screens.widgets.field import AnswerField
from wizard.engine.registry_routes import AccessNote


class RegistryAccess(Vertical):
    """The CA field and the "where from" lines of the last registry check."""

    DEFAULT_CSS = """
    RegistryAccess {
        height: auto; margin-top: 1;
        & > #access-head { height: 1; text-style: bold; }
        & > #access-lines { height: auto; color: $text-muted; padding-left: 2; }
    }
    """

    def __init__(self, ca_file: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._ca_file = ca_file

    def compose(self) -> ComposeResult:
        yield AnswerField(
            "Registry CA file",
            "driver.registryCA",
            self._ca_file,
            placeholder="none (system CAs; certs.d folders are read too)",
            id="registry-ca",
            hint="PEM file of a private registry's CA, like --registry-ca",
        )
        yield Label("Registry access", id="access-head")
        yield Static("shown after the images are checked", id="access-lines", markup=False)

    def show(self, notes: Sequence[AccessNote]) -> None:
        """The lines of one registry check (none: the registries were reached directly, anonymously)."""
        lines = [note.line() for note in notes]
        self.query_one("#access-lines", Static).update("\n".join(lines) or "the registries themselves, anonymously")
