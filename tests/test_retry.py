"""The one retry policy: backoff and Retry-After, what counts as retryable, attempt caps and retry counts."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from wizard.engine.results import CallStats
from wizard.retry import (
    API_CALL,
    MAX_RETRY_AFTER,
    RECONNECT,
    Policy,
    Reconnects,
    Retryable,
    retry_after_seconds,
    retryable_status,
    retrying,
)

FAST = Policy(attempts=3, initial=0.001, cap=0.002)


def test_backoff_doubles_to_its_cap_with_at_most_20_percent_jitter() -> None:
    for retry, base in enumerate([0.2, 0.4, 0.8, 1.6, 3.0, 3.0]):
        assert base <= API_CALL.delay(retry) <= base * 1.2
    assert [min(RECONNECT.initial * 2**n, RECONNECT.cap) for n in range(5)] == [1, 2, 4, 8, 10]


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    assert API_CALL.delay(0, retry_after=2.0) == 2.0
    assert API_CALL.delay(0, retry_after=3600.0) == MAX_RETRY_AFTER
    assert retry_after_seconds({"Retry-After": "1"}) == 1.0
    assert retry_after_seconds({"Retry-After": "86400"}) == MAX_RETRY_AFTER
    soon = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.0 <= (retry_after_seconds({"Retry-After": soon}) or 0) <= 5.0
    assert retry_after_seconds({"Retry-After": "soon-ish"}) is None
    assert retry_after_seconds({}) is None


def test_429_is_always_retryable_5xx_only_when_safe() -> None:
    assert retryable_status(429, safe=False) and retryable_status(503, safe=True)
    assert not retryable_status(503, safe=False)
    assert not retryable_status(404, safe=True) and not retryable_status(409, safe=True)


async def test_retrying_counts_retries_and_returns_the_first_success() -> None:
    stats, calls = CallStats(), []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Retryable(RuntimeError("busy"))
        return "ok"

    assert await retrying(FAST, attempt, stats=stats) == "ok"
    assert (len(calls), stats.retries) == (3, 2)


async def test_when_attempts_run_out_the_last_outcome_is_raised_or_returned() -> None:
    stats = CallStats()

    async def failing() -> str:
        raise Retryable(ValueError("still busy"))

    with pytest.raises(ValueError, match="still busy") as caught:
        await retrying(FAST, failing, stats=stats)
    assert stats.retries == FAST.attempts - 1
    assert caught.value.__suppress_context__  # one clean error, no chain of retries

    async def answering() -> str:
        raise Retryable("429 answer")

    assert await retrying(FAST, answering) == "429 answer"


async def test_other_errors_are_not_retried() -> None:
    stats, calls = CallStats(), []

    async def attempt() -> None:
        calls.append(1)
        raise KeyError("final")

    with pytest.raises(KeyError):
        await retrying(FAST, attempt, stats=stats)
    assert (len(calls), stats.retries) == (1, 0)


async def test_reconnects_give_up_after_consecutive_failures_only() -> None:
    reconnects = Reconnects(FAST)
    error = ConnectionError("watch failed")
    await reconnects.failed(error)
    reconnects.progressed()
    await reconnects.failed(error)
    await reconnects.failed(error)
    with pytest.raises(ConnectionError):
        await reconnects.failed(error)


async def test_retrying_waits_the_failed_attempts_retry_after_else_the_backoff() -> None:
    slow = Policy(attempts=3, initial=30.0, cap=30.0)  # a backoff no test could wait out
    calls: list[float] = []

    async def attempt() -> str:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise Retryable(RuntimeError("throttled"), retry_after=0.05)
        return "ok"

    assert await retrying(slow, attempt) == "ok"
    assert 0.05 <= calls[1] - calls[0] < 5

    backoff = Policy(attempts=2, initial=0.05, cap=0.05)
    calls.clear()

    async def fails() -> str:
        calls.append(time.monotonic())
        raise Retryable(RuntimeError("busy"))

    with pytest.raises(RuntimeError, match="busy"):
        await retrying(backoff, fails)
    assert len(calls) == 2 and 0.05 <= calls[1] - calls[0] < 1


async def test_reconnects_wait_the_retry_after_a_refused_stream_carries_over_the_backoff() -> None:
    class Throttled(Exception):
        retry_after = 0.05  # what wizard.cluster.errors.ApiError carries from a 429's Retry-After

    slow = Policy(attempts=3, initial=30.0, cap=30.0)  # a backoff no test could wait out
    started = time.monotonic()
    await asyncio.wait_for(Reconnects(slow).failed(Throttled()), 5)
    assert 0.05 <= time.monotonic() - started < 5
    fast_backoff = Policy(attempts=3, initial=0.001, cap=0.001)
    started = time.monotonic()
    await Reconnects(fast_backoff).failed(RuntimeError("no Retry-After"))  # none: the policy's backoff
    assert time.monotonic() - started < 0.5
