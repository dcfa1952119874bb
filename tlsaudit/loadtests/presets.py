"""One-click runs like the seeds' (ab at concurrency 1-100, a quick and a full sweep, handshakes at
10/25/50 agents), sized by time and fitted to the organization's caps before they are offered.

Each preset has a time it promises (quick ones a minute, the full sweep five) and sizes in order of
preference: seconds per run first, then fewer levels (the single visitor, c=1, kept to the last); always
3 repeats, the fewest that give an interval (tlsaudit/domain/compare.py). The first size whose bound (plans.bound_s: every run's time limit, its overhead and
the set-up) fits both the promise and the organization's maximum duration is offered with that bound;
when none fits, the preset is shown disabled with the reason. Requests (handshakes) per run are only a
cap: the organization's maximum per run."""

from tlsaudit.loadtests import plans

SEED_LEVELS = (1, 20, 40, 60, 80, 100)
QUICK_S, FULL_S = 60, 300
SECONDS = (3.0, 2.0, 1.5, 1.0)
REPEATS = (3,)   # compare.MIN_PAIRS: fewer give no interval


def presets_within(limits) -> list[dict]:
    """Each preset: kind, title, what it sends (with how long it can take), its form fields as (name,
    value) pairs, and `refused` (why it cannot run here) or None."""
    max_c, max_n = limits.max_concurrency, limits.max_requests_per_run
    levels = [lv for lv in SEED_LEVELS if lv <= max_c] or [max_c]
    found = [load_preset(n, min(c, max_c, n), limits) for n, c in ((100, 1), (100, 20), (500, 50), (500, 100))
             for n in [min(n, max_n)]]
    quick = [lv for lv in levels if lv <= 40] or levels[:1]
    found.append(sweep_preset("Quick sweep", quick, ["new"], QUICK_S, limits))
    found.append(sweep_preset("Full sweep", levels, ["new", "keepalive"], FULL_S, limits))
    agents = [a for a in (10, 25, 50) if a <= max_c] or [max_c]
    found.append(handshake_preset(agents, limits))
    return found


def load_preset(n: int, c: int, limits) -> dict:
    params = {"scheme": "https", "requests": n, "concurrency": c, "keepalive": False, "path": "/"}
    return fitted("load", f"HTTPS: {n} requests, concurrency {c}", QUICK_S, limits,
                  [({**params, "seconds": s, "repeats": r}, f"ab -n {n} -c {c}, at most {s:g} s a run")
                   for r in REPEATS for s in SECONDS])


def sweep_preset(title: str, levels: list[int], modes: list[str], promise: int, limits) -> dict:
    requests = max(limits.max_requests_per_run, max(levels))
    words = " and ".join({"new": "new connections", "keepalive": "keep-alive"}[m] for m in modes)
    sizes = []
    for kept in shrinking(levels):
        for r in REPEATS:
            for s in SECONDS:
                params = {"levels": kept, "requests": requests, "modes": modes, "path": "/", "repeats": r,
                          "seconds": s}
                sizes.append((params, f"HTTP vs HTTPS at c = {fmt(kept)}, {words}, {s:g} s a run"))
    return fitted("sweep", title, promise, limits, sizes)


def handshake_preset(agents: list[int], limits) -> dict:
    sizes = []
    for kept in shrinking(agents):
        per_agent = max(1, limits.max_requests_per_run // max(kept))
        for resume in (True, False):
            for r in REPEATS:
                for s in SECONDS:
                    params = {"versions": ["1.2", "1.3"], "agents_levels": kept, "per_agent": per_agent,
                              "resume": resume, "suites": [], "repeats": r, "seconds": s}
                    also = " and resumed ones" if resume else ""
                    sizes.append((params, f"TLS 1.2 vs 1.3 full handshakes per suite{also}, {fmt(kept)} agents, "
                                          f"{s:g} s a cell"))
    return fitted("handshakes", "Handshakes: TLS 1.2 vs 1.3", QUICK_S, limits, sizes)


def shrinking(levels: list[int]) -> list[list[int]]:
    """The levels, then fewer of them: the single visitor (the lowest) and the highest kept longest."""
    out = [list(levels)]
    while len(out[-1]) > 2:
        middle = out[-1][1:-1]
        out.append([out[-1][0], *middle[:-1], out[-1][-1]] if len(middle) > 1 else [out[-1][0], out[-1][-1]])
    if len(out[-1]) == 2:
        out.append(out[-1][:1])
    return out


def fitted(kind: str, title: str, promise: int, limits, sizes: list[tuple[dict, str]]) -> dict:
    """The first size whose bound fits the promise and the organization's maximum duration."""
    cap = min(promise, limits.max_duration_s)
    for params, what in sizes:
        bound = plans.bound_s(kind, params)
        if bound <= cap:
            return preset(kind, title, f"{what}, {params['repeats']} repeats: at most {bound:.0f} s", params)
    smallest, what = sizes[-1]
    bound = plans.bound_s(kind, smallest)
    reason = (f"Even at its smallest ({what}, {smallest['repeats']} repeats) this takes up to {bound:.0f} s, above "
              f"{limits.organization.name}'s maximum duration of {limits.max_duration_s} s per run (set by this "
              "instance's administrator)." if bound > limits.max_duration_s else
              f"Even at its smallest it takes up to {bound:.0f} s, more than the {promise} s it promises.")
    return {**preset(kind, title, what, smallest), "refused": reason}


def preset(kind: str, title: str, what: str, params: dict) -> dict:
    return {"kind": kind, "title": title, "what": what, "fields": [("kind", kind), *form_fields(params)],
            "bound_s": plans.bound_s(kind, params), "refused": None}


def form_fields(params: dict) -> list[tuple[str, object]]:
    """The params as the form posts them (lists as repeated fields or comma lists, booleans as "on")."""
    fields = []
    for name, value in params.items():
        if name in ("levels", "agents_levels"):
            fields.append((name, fmt(value)))
        elif isinstance(value, list):
            fields += [(name, v) for v in value]
        elif isinstance(value, bool):
            if value:
                fields.append((name, "on"))
        elif name != "suites":
            fields.append((name, value))
    return fields


def fmt(levels) -> str:
    return ",".join(str(lv) for lv in levels)
