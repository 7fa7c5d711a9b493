"""Where the event loop stalls: a watchdog thread that samples the loop thread's stack while it is late.

A heartbeat task on the loop stamps the time every few milliseconds; a daemon thread wakes every
``sample_s`` and, while the heartbeat is older than ``threshold_ms``, records the loop thread's current
stack (``sys._current_frames``), attributed to the phase the caller set. The report lists, per phase,
the stacks that were seen most while stalled (each sample counts the time since the previous one), innermost project frame
first: a locator for the code to move off the loop, not a profiler (a long C call that holds the GIL
is sampled once it returns control).

    watch = StallWatch(); watch.start()   # on the running loop
    watch.phase = "verify"
    ...
    watch.stop(); print(watch.report())
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time
from pathlib import Path
from types import FrameType

ROOT = str(Path(__file__).resolve().parent.parent)
_OURS = ("/wizard/", "/screens/", "/benchmarks/")


class StallWatch:
    """Samples the loop thread's stack while the loop is stalled; :meth:`report` sums them per phase."""

    def __init__(self, threshold_ms: float = 50.0, sample_s: float = 0.005, depth: int = 6) -> None:
        self.phase = "start"
        self.threshold = threshold_ms / 1000
        self.sample_s = sample_s
        self.depth = depth
        self.samples: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        """Phase -> stack -> seconds sampled while stalled."""
        self._beat = time.monotonic()
        self._loop_thread = 0
        self._stop = threading.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._loop_thread = threading.get_ident()
        self._task = asyncio.get_running_loop().create_task(self._heartbeat())
        threading.Thread(target=self._sample, name="stallwatch", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()

    async def _heartbeat(self) -> None:
        while True:
            self._beat = time.monotonic()
            await asyncio.sleep(0.002)

    def _sample(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.sample_s):
            # a sample stands for the time since the previous one: while the loop thread holds the GIL the
            # sampler wakes later than asked, so counting samples would undercount
            now = time.monotonic()
            weight, last = now - last, now
            if now - self._beat < self.threshold:
                continue
            frame = sys._current_frames().get(self._loop_thread)
            if frame is None:
                continue
            try:
                key = self._key(frame)
            except Exception:  # the loop thread's frames change under us: skip this sample
                continue
            self.samples[self.phase][key] += weight

    def _key(self, frame: FrameType) -> str:
        stack: list[tuple[str, int, str]] = []
        current: FrameType | None = frame
        while current is not None:
            code = current.f_code
            stack.append((code.co_filename, current.f_lineno, code.co_name))
            current = current.f_back
        inner, ours = stack[0], [f for f in stack if any(part in f[0] for part in _OURS)]
        lines = [f"{_short(inner[0])}:{inner[1]} {inner[2]}"]
        lines += [f"  < {_short(f[0])}:{f[1]} {f[2]}" for f in ours[: self.depth] if f is not inner]
        return "\n".join(lines)

    def report(self, top: int = 8) -> str:
        """Per phase, the stacks seen most while the loop was stalled, with the time they account for."""
        out = []
        for phase, counter in self.samples.items():
            total = sum(counter.values()) * 1000
            out.append(f"== {phase}: {total:.0f} ms sampled while stalled > {self.threshold * 1000:.0f} ms")
            for key, seconds in counter.most_common(top):
                out.append(f"{seconds * 1000:7.0f} ms  {key}")
        return "\n".join(out)


def _short(filename: str) -> str:
    if filename.startswith(ROOT):
        return filename[len(ROOT) + 1 :]
    return filename.split("site-packages/")[-1].split("/lib/python3.11/")[-1]


class Phased:
    """A loop probe that measures per phase; a :class:`StallWatch`, when given, follows the same phase."""

    def __init__(self, watch: StallWatch | None = None) -> None:
        self.watch = watch
        self._phase = "start"

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, name: str) -> None:
        self._phase = name
        if self.watch is not None:
            self.watch.phase = name
        self.phase_changed(name)

    def phase_changed(self, name: str) -> None:
        """What a subclass does when the phase changes (nothing here)."""
