"""One-click runs like the seeds' (ab -n 100/500 at concurrency 1-100, a quick sweep, handshakes
10/25/50 agents x 20: the seeds' 10 per agent ran for ~0.5 s per cell over a 50 ms link, too short to
conclude), shrunk to the organization's caps. Every preset gets the default repeats and warm-up."""

SEED_LEVELS = (1, 20, 40, 60, 80, 100)


def presets_within(limits) -> list[dict]:
    """Each preset: kind, title, what it sends, and its form fields as (name, value) pairs."""
    max_c, max_n = limits.max_concurrency, limits.max_requests_per_run
    levels = [lv for lv in SEED_LEVELS if lv <= max_c] or [max_c]
    per_agent = 20   # services.DEFAULT_PER_AGENT: a TLS 1.3 cell lasts ~1 s over a 50 ms round trip
    agent_levels = [a for a in (10, 25, 50) if a <= max_c and a * per_agent <= max_n] or [1]
    found = []
    for n, c in ((100, 1), (100, 20), (500, 50), (500, 100)):
        n, c = min(n, max_n), min(c, max_c, n)
        found.append(preset("load", f"HTTPS: {n} requests, concurrency {c}", f"ab -n {n} -c {c}",
                             [("scheme", "https"), ("requests", n), ("concurrency", c)]))
    quick = [lv for lv in levels if lv <= 40] or levels[:1]
    sweep_n = min(500, max_n)   # per repeat (3 by default): 100 ran for a few ms on a fast site
    found.append(preset("sweep", "Quick sweep", f"HTTP vs HTTPS at {fmt(quick)}, {sweep_n} requests each",
                        [("levels", fmt(quick)), ("requests", max(sweep_n, quick[-1])), ("modes", "new")]))
    full_n = min(500, max_n)
    found.append(preset("sweep", "Full sweep", f"HTTP vs HTTPS at {fmt(levels)}, {full_n} requests each, "
                        "new connections and keep-alive",
                        [("levels", fmt(levels)), ("requests", max(full_n, levels[-1])), ("modes", "new"),
                         ("modes", "keepalive")]))
    found.append(preset("handshakes", f"Handshakes {'/'.join(map(str, agent_levels))} agents × {per_agent}",
                        "TLS 1.2 vs 1.3 full handshakes per suite",
                        [("versions", "1.2"), ("versions", "1.3"), ("agents_levels", fmt(agent_levels)),
                         ("per_agent", per_agent), ("resume", "on")]))
    return found


def preset(kind: str, title: str, what: str, fields: list[tuple[str, object]]) -> dict:
    return {"kind": kind, "title": title, "what": what, "fields": [("kind", kind), *fields]}


def fmt(levels) -> str:
    return ",".join(str(lv) for lv in levels)
