"""Every measuring command the README shows answers, within the time it states, at 0 and 50 ms RTT (#26).

The commands come from README.md and run as a reader types them (tests/test_readme_commands.py's
shell), aimed at the nginx lab directly and through the latency lab's delay line;
bench/readme_commands.py does the same at 150 ms too and prints the figures.
"""

import pytest

from bench.readme_commands import measure_at, measuring_commands


def test_the_readme_shows_a_time_sized_line_for_each_measuring_command():
    names = [line.split()[2] for line in measuring_commands()]
    assert sorted(names) == ["handshakes", "loadtest", "overhead", "probe"], names


@pytest.mark.quiet
@pytest.mark.parametrize("rtt_ms", [0, 50])
def test_each_readme_measuring_command_answers_within_the_time_it_states(rtt_ms, tls_lab, tmp_path):
    """Given the README's lines and a server `rtt_ms` away, when each runs with its defaults, then it
    ends within the longest time it printed for its plan (start-up aside), and every HTTPS vs HTTP
    (or TLS 1.3 vs 1.2) figure has a verdict: higher, lower, or no significant difference with its
    interval; none says "too short" or "too few runs"; behind a real link (50 ms) no interval is too
    wide to tell."""
    outcomes = measure_at(tls_lab, rtt_ms, tmp_path / "var")

    for outcome in outcomes:
        assert outcome.exit_code == 0, (outcome.command, outcome.answer)
        assert outcome.answered, (outcome.command, outcome.answer)
        assert "too short" not in outcome.answer and "too few runs" not in outcome.answer, outcome.answer
        assert outcome.within, (outcome.command, outcome.wall_s, outcome.planned_s)
        if rtt_ms and outcome.command.split()[2] != "probe":
            assert "the runs disagree" not in outcome.answer, outcome.answer
    # the probe's headline behind a real link: the cold page load (a reload's render time varies with the
    # machine's load, and the page then says the runs disagree)
    [probe] = [o for o in outcomes if o.command.split()[2] == "probe"]
    cold_load = probe.answer.split("cold load: ")[1].split(";")[0]
    assert not rtt_ms or "the runs disagree" not in cold_load, probe.answer
    timed = [o for o in outcomes if o.planned_s is not None]
    assert {o.command.split()[2] for o in timed} == {"loadtest", "overhead", "handshakes", "probe"}
