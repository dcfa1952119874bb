"""What a run costs after its last request: recording samples into histograms and the result's wire form.

`ab -n 20000 -k` spends ~0.1 s of CPU on its whole run; hdrh's record_value (~2 µs of Python per
distinct value) and dataclasses.asdict (a deepcopy per sample) cost ~50 ms of that at 20,000
requests. The fast paths must give exactly what the slow ones gave.
"""

from __future__ import annotations

import dataclasses
import random
import sys

from workers.load.merge import encode_histogram, new_histogram, record_sorted_values, record_values
from workers.load.spec import HISTOGRAM_RANGE_US, PHASES, LoadResult, LoadSpec


def python_calls_into(file_part: str, action) -> int:
    """How many Python functions defined in a file whose path contains `file_part` ran during action()."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call" and file_part in frame.f_code.co_filename:
            calls += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return calls


def test_bulk_recording_fills_the_same_buckets_as_record_value_without_calling_it():
    rng = random.Random(7)
    highest = HISTOGRAM_RANGE_US[1]
    values = [int(rng.lognormvariate(rng.uniform(0, 16), 2)) for _ in range(5_000)] + [0, -5, highest, highest + 1]
    one_by_one, bulk = new_histogram(), new_histogram()
    one_by_one.record_value(7, 3)  # histograms that already hold counts keep them
    bulk.record_value(7, 3)
    for value in values:
        one_by_one.record_value(min(max(value, 0), highest))

    assert python_calls_into("hdrh/histogram.py", lambda: record_values(bulk, values)) == 0
    assert list(bulk.counts) == list(one_by_one.counts)
    assert (bulk.total_count, bulk.min_value, bulk.max_value) == (
        one_by_one.total_count, one_by_one.min_value, one_by_one.max_value)
    assert encode_histogram(bulk) == encode_histogram(one_by_one)


def test_the_wire_form_equals_asdict_without_deep_copying_every_sample():
    samples = {phase: list(range(20_000)) for phase in PHASES}
    result = LoadResult(spec=LoadSpec(scheme="http", host="example.test", port=80, headers=(("X-A", "1"),)),
                        started_at=1.0, time_taken_s=2.0, histograms={"total": "HISTF"}, samples=samples,
                        status_codes={"200": 20_000}, errors={"x": 1}, notes=["a note"])

    wire = {}
    deep_copies = python_calls_into("copy.py", lambda: wire.update(result.to_dict()))
    assert deep_copies < 200, "a few for the spec and counters, not one per sample (120,000 here)"
    assert wire == {**dataclasses.asdict(result), "spec": result.spec.to_dict()}
    wire["samples"]["total"].append(-1)
    wire["notes"].append("another")
    assert len(result.samples["total"]) == 20_000 and result.notes == ["a note"], "the wire form is a copy"


def test_recording_a_sorted_list_by_its_runs_equals_recording_every_value():
    """The C loop's exact samples arrive sorted: their histogram is filled per run of equal values."""
    rng = random.Random(11)
    highest = HISTOGRAM_RANGE_US[1]
    values = sorted([int(rng.lognormvariate(rng.uniform(0, 12), 2)) for _ in range(5_000)]
                    + [-7, -7, 0, highest, highest + 1, highest + 1] + [42] * 300)
    by_value, by_run = new_histogram(), new_histogram()
    by_value.record_value(9, 2)  # counts already held stay
    by_run.record_value(9, 2)

    record_values(by_value, values)
    record_sorted_values(by_run, values)

    assert encode_histogram(by_run) == encode_histogram(by_value)
    assert (by_run.total_count, by_run.min_value, by_run.max_value) == (
        by_value.total_count, by_value.min_value, by_value.max_value)
    record_sorted_values(by_run, [])
    assert by_run.total_count == by_value.total_count
