"""One performance step as the run row stores it: the agents' results merged exactly, with ab's report.

Kept beside the merge rules rather than in the task, so the stored shape has one writer that the demo data
and the round-trip page tests can call without Celery.
"""

from tlsaudit.domain.abstats import ab_report
from workers.load.handshake import merge_handshake_results
from workers.load.merge import merge_results

HANDSHAKE_CELL_KEYS = ("version", "suite", "agents", "per_agent", "resume", "repeat", "warmup")


def merged_entry(step: dict, index: int, results: list[dict]) -> dict:
    if step["engine"] == "handshake":
        cell = {key: step.get(key) for key in HANDSHAKE_CELL_KEYS}
        return {"step": index, "label": step["label"], "cell": cell, "result": merge_handshake_results(results)}
    merged = merge_results(results)
    report = ab_report(merged)
    merged.pop("samples", None)  # per-request samples are large; the histograms stay and re-derive the report
    return {"step": index, "label": step["label"], "scheme": step["scheme"], "level": step["level"],
            "mode": step["mode"], "repeat": step.get("repeat", 0), "warmup": step.get("warmup", False),
            "result": merged, "report": report}
