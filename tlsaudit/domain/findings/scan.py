"""The scan itself: results the site owner should distrust because the scan was disturbed."""

from __future__ import annotations

from tlsaudit.domain.findings.registry import Context, Outcome, fail, ok, rule

SUITE_TIMEOUTS_LIMIT = 10


@rule("scan.suite_timeouts", "medium", "Many cipher-suite tests timed out", "Cipher-suite tests completed",
      "Some cipher-suite tests ended in a network timeout, which the scanner counts as 'rejected'. "
      "Suites the server does accept may be missing from this report, so treat cipher results as "
      "incomplete and rescan.")
def suite_timeouts(ctx: Context) -> Outcome:
    n = ctx.facts.timed_out_suite_tests
    if n > SUITE_TIMEOUTS_LIMIT:
        return fail(f"{n} suite tests timed out during the handshake (limit {SUITE_TIMEOUTS_LIMIT})")
    return ok(f"{n} suite tests timed out" if n else "no suite test timed out")
