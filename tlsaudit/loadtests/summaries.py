"""A performance run's summary, re-derivable from its stored steps: sweeps, the overhead per level and on
average (signed, with intervals); load tests, the cell over its repeats; handshakes, each cell over its
repeats, TLS 1.3 vs 1.2 and resumed vs full."""

from __future__ import annotations

from tlsaudit.domain import abstats
from tlsaudit.domain.handshake_stats import cell_rows, compare_resumption, compare_versions
from tlsaudit.loadtests.models import PerfRun

SUMMARY_VERSION = 4          # 4: intervals from Harrell-Davis jackknives; 3: every request's time compared


def summarise(run: PerfRun) -> dict:
    """Re-derivable from the results: sweeps, the overhead per level and on average (signed, with
    intervals); load tests, the cell over its repeats; handshakes, each cell over its repeats, TLS 1.3
    vs 1.2 and resumed vs full. Warm-ups and partial (stopped) steps are left out."""
    return summary_for(run.kind, run.results)


def summary_for(kind: str, results: list[dict]) -> dict:
    if kind == PerfRun.Kind.HANDSHAKES:
        cells = handshake_cells(results)
        summary = {"cells": cell_rows(cells), "versions": compare_versions(cells),
                   "resumption": compare_resumption(cells)}
    elif kind == PerfRun.Kind.SWEEP:
        summary = sweep_summary(results)
    else:
        summary = load_summary(results)
    return {**summary, "stats_version": SUMMARY_VERSION}


def summary_of(run: PerfRun) -> dict:
    """The stored summary, or one derived now for a run finished before repeats and signed overheads
    (its steps read as single runs: figures without intervals)."""
    if (run.summary or {}).get("stats_version") == SUMMARY_VERSION or not run.results:
        return run.summary or {}
    return summarise(run)


def measured_runs(results: list[dict]) -> list[dict]:
    """The ab-style runs a comparison may use: not warm-ups, not steps cut short by Stop or the deadline."""
    return [{"mode": e["mode"], "level": e["level"], "scheme": e["scheme"], "repeat": e.get("repeat", 0),
             **abstats.run_figures(with_request_times(e))}
            for e in results if "report" in e and not e.get("warmup") and not e["result"].get("cancelled")]


def with_request_times(entry: dict) -> dict:
    """The step's report with every request's time: runs stored before reports kept it have it in the
    engine's result."""
    report = entry["report"]
    if report.get("total_histogram"):
        return report
    return {**report, "total_histogram": ((entry.get("result") or {}).get("histograms") or {}).get("total")}


def sweep_summary(results: list[dict]) -> dict:
    """Per mode: abstats' rows (signed overhead per level, with intervals) and the average row."""
    return abstats.without_pairs(abstats.sweep_summary(measured_runs(results)))


def load_summary(results: list[dict]) -> dict:
    runs = measured_runs(results)
    return {"cell": abstats.cell_summary(runs)} if runs else {}


def handshake_cells(results: list[dict]) -> list[dict]:
    return [{**e["result"], "repeat": (e.get("cell") or {}).get("repeat", 0),
             "warmup": (e.get("cell") or {}).get("warmup", False)}
            for e in results if not e["result"].get("cancelled")]
