"""The one retry policy of every network call: what is retried, how often, and how long to wait.

- **What**: a dropped connection (the request was sent, the answer lost) when the call is safe to
  repeat; 429 always (the server did not act on the request); 5xx when the call is safe. A timeout is
  the user's limit and is never retried, nor is a refused connection or a TLS failure.
- **How long**: the server's ``Retry-After`` (seconds or an HTTP date, capped at
  :data:`MAX_RETRY_AFTER`), else exponential backoff from :attr:`Policy.initial` doubling up to
  :attr:`Policy.cap`, stretched by up to 20 % of random jitter so that clients do not retry in step.
- **How often**: :data:`API_CALL` and :data:`EXEC` (Kubernetes API), :data:`REGISTRY_FETCH`,
  :data:`APPLY` (one more server-side apply after a dropped connection proved it did not land) and
  :data:`RECONNECT` (a watch that keeps failing, counted between events).

:func:`retrying` runs one attempt function under a policy; an attempt that failed in a retryable way
raises :class:`Retryable`. :class:`Reconnects` applies :data:`RECONNECT` to a
long-running stream, whose consecutive failures are reset by any progress.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from wizard.engine.results import CallStats

T = TypeVar("T")

MAX_RETRY_AFTER = 10.0
"""Longest wait a server's ``Retry-After`` can ask for (a longer one is cut to this)."""
JITTER = 0.2
"""Each backoff is stretched by a random 0 to 20 %."""
DROPS = (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, ConnectionResetError)
"""A connection lost after the request was sent (a connect error is not one)."""


@dataclass(frozen=True)
class Policy:
    """Attempt cap and backoff of one kind of call."""

    attempts: int
    """Attempts in all (the first one included)."""
    initial: float = 0.2
    """Seconds before the first retry; doubled for each further one."""
    cap: float = 3.0
    """Longest backoff, in seconds, before jitter."""

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds before retry number ``retry`` (0-based): the server's wish, else backoff with jitter."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER)
        return min(self.initial * 2**retry, self.cap) * (1.0 + JITTER * random.random())


API_CALL = Policy(attempts=4)
"""A Kubernetes API request: three retries, 0.2 + 0.4 + 0.8 s of backoff."""
EXEC = Policy(attempts=4)
"""An exec whose websocket handshake was refused (the command never ran)."""
REGISTRY_FETCH = Policy(attempts=3)
"""One exchange with an image registry (all are reads): two retries."""
APPLY = Policy(attempts=2)
"""A server-side apply whose connection dropped and whose re-read shows it did not land."""
RECONNECT = Policy(attempts=6, initial=1.0, cap=10.0)
"""A watch that fails (not expires) again and again: five waits of 1, 2, 4, 8 and 10 s, then give up."""


def retryable_status(status: int, *, safe: bool) -> bool:
    """Whether an HTTP error answer may be asked again: 429 always, 5xx for calls safe to repeat."""
    return status == 429 or (safe and status >= 500)


def dropped(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection lost mid-request (retried for safe calls; timeouts are not)."""
    return isinstance(exc, DROPS) or (
        isinstance(exc, aiohttp.ClientOSError) and not isinstance(exc, aiohttp.ClientConnectorError)
    )


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """A ``Retry-After`` header (delay-seconds or HTTP-date) in seconds from now, capped; None if absent or unreadable."""
    value = headers.get("Retry-After", "").strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, min(when - time.time(), MAX_RETRY_AFTER))


class Retryable(Exception):
    """Raised by an attempt that failed in a way that may be repeated.

    ``outcome`` is what the caller gets when no attempt is left: an exception (raised), or a value
    (returned, e.g. the last error answer, for a caller that words it itself).
    """

    def __init__(self, outcome: Any, *, retry_after: float | None = None) -> None:
        # A value outcome (a response) is not quoted: its body could be anything.
        super().__init__(str(outcome) if isinstance(outcome, BaseException) else type(outcome).__name__)
        self.outcome = outcome
        self.retry_after = retry_after


async def retrying(policy: Policy, attempt: Callable[[], Awaitable[T]], *, stats: CallStats | None = None) -> T:
    """``attempt()`` until it returns or raises anything but :class:`Retryable`, at most ``policy.attempts`` times.

    Between attempts it waits the policy's delay for the attempt that failed (or that attempt's
    ``Retry-After``). ``stats.retries`` counts the attempts made after a failure. When the last attempt
    fails with :class:`Retryable`, its ``outcome`` is raised (an exception) or returned.

    A plain loop: it runs around every exec and API call (5,000 execs in one verification), and a
    general retry library's per-call objects cost more than the one attempt most calls make.
    """
    failed = 0
    while True:
        try:
            return await attempt()
        except Retryable as exc:
            failed += 1
            if failed >= policy.attempts:
                if isinstance(exc.outcome, BaseException):
                    raise exc.outcome from None
                result: T = exc.outcome
                return result
            if stats is not None:
                stats.retries += 1
            await asyncio.sleep(policy.delay(failed - 1, exc.retry_after))


class Reconnects:
    """Consecutive failures of a long-running stream (a watch) under :data:`RECONNECT`."""

    def __init__(self, policy: Policy = RECONNECT) -> None:
        self.policy = policy
        self.failures = 0

    def progressed(self) -> None:
        """The stream delivered something: the next failure counts from one again."""
        self.failures = 0

    async def failed(self, error: BaseException) -> None:
        """Wait before reconnecting, then return; raise ``error`` when the policy's attempts are used up.

        The wait is the server's ``Retry-After`` when ``error`` carries one (a refused watch's
        ``retry_after``, as :class:`wizard.cluster.errors.ApiError` has it; capped as for calls), else
        the policy's backoff. The caller's own deadline bounds it by cancelling the wait."""
        self.failures += 1
        if self.failures >= self.policy.attempts:
            raise error
        retry_after = getattr(error, "retry_after", None)
        await asyncio.sleep(self.policy.delay(self.failures - 1, retry_after))
