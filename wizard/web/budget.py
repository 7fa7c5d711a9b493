"""Each classroom session's share of the server: CPU-seconds in a sliding window, and memory.

Input is bounded where it enters (:mod:`wizard.web.relay`), but whatever else makes one session
expensive (a bug, a scenario heavier than the class was sized for), one student must not take the
trainer's machine: :class:`Budget` is sampled every :data:`CHECK_EVERY_S` seconds for each session a
student holds, and a session that used more than :data:`CPU_BUDGET_S` CPU-seconds within
:data:`CPU_WINDOW_S` seconds, or holds more than :data:`MEMORY_BUDGET` bytes resident, is ended
(:meth:`wizard.web.seats.Seats.police`): its tab is told why (close code 4008) and the console gets a line.

A session's start-up costs ~2.5 CPU-s, an apply on the bundled scenarios a few; one measures ~140 MB.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

CHECK_EVERY_S = 2.0
"""Seconds between two looks at the sessions' use."""

CPU_WINDOW_S = 60.0
"""The sliding window of the CPU budget."""

CPU_BUDGET_S = 40.0
"""CPU-seconds a session may use within :data:`CPU_WINDOW_S` (two thirds of a core for a whole minute)."""

MEMORY_BUDGET = 1024 * 1024 * 1024
"""Resident bytes a session may hold (the heavy ``large`` scenario takes ~530 MiB, the others ~140 MB)."""


def resident_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (Linux /proc; 0 when unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class Budget:
    """One session's use over time; :meth:`over` says what it went past ("" while within budget)."""

    def __init__(
        self, cpu_budget: float = CPU_BUDGET_S, window: float = CPU_WINDOW_S, memory_budget: int = MEMORY_BUDGET
    ) -> None:
        self.cpu_budget, self.window, self.memory_budget = cpu_budget, window, memory_budget
        self.samples: deque[tuple[float, float]] = deque()

    def over(self, now: float, cpu_seconds: float, resident: int) -> str:
        """Record a sample; the budget it is past, in words, or ""."""
        self.samples.append((now, cpu_seconds))
        while now - self.samples[0][0] > self.window:  # (the sample just taken always stays)
            self.samples.popleft()
        used = cpu_seconds - self.samples[0][1]
        if used > self.cpu_budget:
            return f"{used:.0f} CPU-seconds within {now - self.samples[0][0]:.0f} s (its share: {self.cpu_budget:g})"
        if resident > self.memory_budget:
            return f"{resident >> 20} MiB of memory (its share: {self.memory_budget >> 20} MiB)"
        return ""
