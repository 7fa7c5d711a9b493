"""The trainer's console hears of every refused request in one line, never a traceback, and never a flood.

aiohttp logs a request its parser cannot read (a raw non-ASCII byte in the address, a 10 KB token or
cookie, a malformed header) with a traceback on ``aiohttp.server`` before it answers 400.
:class:`QuietParserErrors` replaces that record with one line from :func:`refused`, which the
classroom's own refusals (a wrong token, a foreign ``Origin``, the status page without its key) use
too. :class:`RateLimit` lets :data:`LINES_PER_WINDOW` lines through per :data:`WINDOW_S` seconds and
then one line saying how many more there were: a client that sends a thousand bad requests costs the
console a few lines.
"""

from __future__ import annotations

import logging
import time

from aiohttp import http_exceptions

log = logging.getLogger("wizard.web.server")

LINES_PER_WINDOW = 10
"""Refusal lines printed per window; past that they are counted."""

WINDOW_S = 60.0
"""Seconds of a window."""

_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (http_exceptions.LineTooLong, "a line over 8 KB (address, token, cookie or header)"),
    (http_exceptions.InvalidURLError, "a malformed address"),
    (http_exceptions.InvalidHeader, "a malformed header"),
    (http_exceptions.BadHttpMethod, "not an HTTP request"),
    (http_exceptions.BadStatusLine, "not an HTTP request"),
    (http_exceptions.HttpProcessingError, "a malformed request"),
)


class RateLimit:
    """At most ``lines`` lines per ``window`` seconds; the rest counted, and said when the next window opens."""

    def __init__(self, lines: int = LINES_PER_WINDOW, window: float = WINDOW_S) -> None:
        self.lines, self.window = lines, window
        self.start = -window
        self.printed = 0
        self.held = 0

    def admit(self, now: float | None = None) -> tuple[bool, int]:
        """Whether to print this line, and how many lines were held back in the window that just ended."""
        now = time.monotonic() if now is None else now
        held = 0
        if now - self.start >= self.window:
            held, self.start, self.printed, self.held = self.held, now, 0, 0
        if self.printed < self.lines:
            self.printed += 1
            return True, held
        self.held += 1
        return False, held


_limit = RateLimit()


def refused(status: int, why: str, address: str | None) -> None:
    """One console line for one refused request (rate-limited)."""
    show, held = _limit.admit()
    if held:
        log.warning("(%d more refused requests in the last %g s were not shown)", held, _limit.window)
    if show:
        log.warning("refused %s: %d, %s", _printable(address or "a client"), status, _printable(why))


def _printable(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters of printable ASCII (a header's bytes never reach the console)."""
    return "".join(c if c.isascii() and c.isprintable() else "?" for c in text[:limit])


def describe(error: BaseException) -> str:
    """What was wrong with a request aiohttp's parser refused, in words (never its raw bytes)."""
    for kind, words in _KINDS:
        if isinstance(error, kind):
            return words
    return "a malformed request"


class QuietParserErrors(logging.Filter):
    """On ``aiohttp.server``: a request the parser refused becomes one :func:`refused` line, not a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, http_exceptions.HttpProcessingError):
            return True  # anything else (a bug) keeps its traceback
        address = record.args[0] if isinstance(record.args, tuple) and record.args else None
        refused(error.code or 400, describe(error), str(address) if address else None)
        return False


def install() -> None:
    """Put :class:`QuietParserErrors` on aiohttp's server logger (once)."""
    server = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, QuietParserErrors) for f in server.filters):
        server.addFilter(QuietParserErrors())
