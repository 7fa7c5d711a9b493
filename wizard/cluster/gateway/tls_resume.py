"""TLS session resumption for the client's connections, which aiohttp's websocket API cannot ask for.

Each exec is a connection of its own (the exec protocol shares none), so a 5,000-node verification makes
5,000 TLS handshakes; resuming one skips the server's certificate signature and the client's chain
verification (docs/benchmarks.md measures it). The gateway sets :class:`ResumingTLS` as its TLS context's
``sslobject_class``, from which asyncio builds every TLS connection of that context.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ssl
import weakref
from typing import Any


@dataclasses.dataclass
class Resumption:
    """One TLS context's newest resumable session per server name, and how many handshakes resumed one."""

    tickets: dict[str, ssl.SSLSession] = dataclasses.field(default_factory=dict)
    resumed: int = 0


RESUMPTIONS: weakref.WeakKeyDictionary[ssl.SSLContext, Resumption] = weakref.WeakKeyDictionary()


class ResumingTLS(ssl.SSLObject):
    """A client TLS object that offers its context's newest session ticket and keeps the newest it gets.

    Each exec is a connection of its own; resuming skips the server's certificate signature and the
    client's chain verification (a share of both sides' CPU per exec, 5,000 execs in a large
    verification: docs/benchmarks.md). aiohttp takes no session, but asyncio builds its TLS objects from
    the context's ``sslobject_class``; the session is set before the first handshake step, as
    :attr:`ssl.SSLObject.session` allows. A server that refuses the ticket makes a full handshake.

    A ticket is offered only to the server name it came from: a resumed handshake verifies no certificate,
    so a ticket of ``localhost`` offered under another ``tls-server-name`` would pass unverified.
    """

    def do_handshake(self) -> None:
        record = RESUMPTIONS.setdefault(self.context, Resumption())
        if not self.__dict__.get("_offered"):
            self._offered = True
            ticket = record.tickets.get(str(self.server_hostname or ""))
            if ticket is not None and self.server_hostname and not self.server_side:
                with contextlib.suppress(ValueError, TypeError, ssl.SSLError):
                    self.session = ticket
        super().do_handshake()  # raises SSLWantReadError until the handshake is done
        if self.session_reused:
            record.resumed += 1

    def read(self, len: int = 1024, buffer: Any = None) -> Any:
        data = super().read(len, buffer)
        if not self.__dict__.get("_kept"):
            session = self.session  # TLS 1.3 sends its ticket after the handshake: kept once it came
            if session is not None and session.has_ticket:
                RESUMPTIONS.setdefault(self.context, Resumption()).tickets[str(self.server_hostname or "")] = session
                self._kept = True
        return data
