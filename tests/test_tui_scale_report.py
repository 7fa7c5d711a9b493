"""The TUI scale benchmark's verdicts and report, for a whole run and for one cut short with ``--until``.

No walk runs here (``benchmarks/tui_scale.py`` itself is run by hand): the results are shaped as its JSON
is, and the judging and the text must take what ran, not fail on the measures a short run leaves out.
"""

from __future__ import annotations

from typing import Any

from benchmarks.tui_measures import TARGETS, report_lines, verdicts
from benchmarks.tui_scale import WALK_STEPS
from screens.flow import STEP_NAMES


def step(seconds: float, stall_ms: float = 20.0, turn_ms: float = 20.0) -> dict[str, float]:
    return {
        "seconds": seconds,
        "max_stall_ms": stall_ms,
        "max_busy_stall_ms": stall_ms,
        "max_turn_cpu_ms": turn_ms,
        "rss_mb": 120.0,
        "gc_max_ms": 1.0,
        "gc_total_ms": 2.0,
        "steal_pct": 0.0,
    }


def result(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "machine": {"nproc": "2"},
        "nodes": 50,
        "steps": {"connect": step(1.2), "nodes": step(0.2, stall_ms=150.0)},
        "f1_ms": {"nodes": 34.2},
        "f1_cpu_ms": {"nodes": 30.0},
        "quit_ms": 1.4,
        "peak_rss_mb": 124.1,
        "verify_failed": [],
        "engine": {},
        "ratio": {},
    }
    return base | extra


def test_a_run_cut_short_is_judged_on_what_ran() -> None:
    short = result(until="nodes")
    assert verdicts(short) == [f"nodes: event-loop stall 150.0 ms > {TARGETS['max_stall_ms']:g}"]
    short["targets_missed"] = verdicts(short)
    text = "\n".join(report_lines(short))
    assert "stopped after nodes: no idle period" in text
    assert "÷ engine" not in text


def test_one_long_loop_turn_misses_its_target_even_without_a_stall() -> None:
    """Issue 28: a turn of 60 ms of the loop's CPU fails the run although the stall (a quiet machine) stayed short."""
    run = result(steps={"driver": step(1.0, stall_ms=70.0, turn_ms=60.0)}, background_load=True, until="driver")
    assert verdicts(run) == [f"driver: loop turn 60.0 ms of CPU > {TARGETS['max_turn_cpu_ms']:g}"]
    run["targets_missed"] = verdicts(run)
    assert "one CPU-bound process beside it" in "\n".join(report_lines(run))


def test_a_whole_run_is_judged_on_the_ratios_and_the_idle_period() -> None:
    whole = result(
        steps={"paths": step(2.0), "verify": step(3.0)},
        engine={"paths_s": 1.0, "verify_s": 2.9},
        ratio={"paths": 2.0, "verify": 1.03},
        idle_s=1.0,
        idle_rss_growth_mb=12.0,
        idle_cpu_pct=0.5,
        idle_max_stall_ms=3.0,
        idle_max_busy_stall_ms=3.0,
        server_idle_cpu_pct=0.0,
        server_idle_rss_growth_mb=0.0,
    )
    assert verdicts(whole) == ["paths: TUI ÷ engine 2.0 > 1.3", "idle_rss_growth_mb 12.0 > 10"]
    whole["targets_missed"] = verdicts(whole)
    text = "\n".join(report_lines(whole))
    assert "paths: TUI 2.0 s ÷ engine alone 1.0 s = 2.0" in text
    assert "idle 1.0 s: RSS growth 12.0 MiB" in text


def test_the_walk_and_until_cover_every_step_of_the_wizard_in_order() -> None:
    assert WALK_STEPS == STEP_NAMES
