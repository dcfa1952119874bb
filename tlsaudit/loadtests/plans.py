"""Turn a run's validated params into steps, and a step into agent shares. Pure: plain dicts.

A step is one ab-style run (one repeat of a load cell or of a sweep's level/scheme/mode) or one
repeat of a handshake cell; steps run one after another (so they never compete for the same CPU),
each split over agent tasks. The run design (see tlsaudit/domain/stats.py for what is computed):

1. Warm-up steps first, discarded: the first connections of a run pay for DNS, TCP slow start,
   the server's caches and our own imports; they would land in whichever cell ran first.
2. Then `repeats` rounds; each round runs every cell once. Rounds, not cells, are the outer loop,
   so a slow minute on a shared machine or a real network hits one repeat of every cell instead of
   every repeat of one cell, and a stopped run still has a balanced set.
3. The two sides of a comparison run back to back (HTTP then HTTPS, TLS 1.2 then 1.3), and the order
   alternates by round (A B, B A, A B …) so that neither side always runs first.
"""

from __future__ import annotations

MODES = {"new": "new connection per request", "keepalive": "keep-alive"}
SCHEMES = ("http", "https")
# Every run (an ab-style run or a handshake cell) stops after `seconds` or at its request (handshake)
# count, whichever comes first, like ab -t / wrk -d with -n as a cap: a plan's length is known before it
# starts, whatever the site's speed. A run stopped early keeps what it measured.
RUN_TIME_LIMIT_S = 5.0               # the default seconds per run
MIN_RUN_SECONDS, MAX_RUN_SECONDS = 0.5, 30.0
FITTING_SECONDS = (5.0, 3.0, 2.0, 1.5, 1.0)   # tried in turn when a run asks for none (API defaults)
# Measured around each run on the shipped stack (bench/plan_bound.py): agents dispatched over Redis, their
# results merged and stored, in-flight requests finishing after the limit; and once per run the
# pre-flight, target locks and (handshakes) the suite probes.
STEP_OVERHEAD_S = 0.6
RUN_OVERHEAD_S = 5.0
# A handshake plan's cells depend on the suites the server accepts, probed when the run starts: before
# it, the bound assumes every candidate (TLS 1.2: 6 ECDHE suites, RSA and ECDSA; TLS 1.3: 3).
WORST_CASE_SUITES = {"1.2": 6, "1.3": 3}
WARMUP_REQUESTS = 50        # per mode and scheme
WARMUP_CONCURRENCY = 10
WARMUP_AGENTS, WARMUP_PER_AGENT = 2, 5   # per version


def ports_of(site) -> dict[str, int]:
    """The site's port for each scheme."""
    return {"http": site.http_port, "https": site.https_port}


def target_ports(kind: str, params: dict, ports: dict[str, int]) -> list[tuple[str, int]]:
    """The (scheme, port) pairs a run of `kind` loads: what its task pre-flights and locks. A sweep
    loads both; a load run its scheme; a handshake run HTTPS."""
    if kind == "sweep":
        return [("http", ports["http"]), ("https", ports["https"])]
    scheme = params.get("scheme", "https") if kind == "load" else "https"
    return [(scheme, ports[scheme])]


def split(total: int, parts: int) -> list[int]:
    """`total` in `parts` near-equal positive shares, larger first: split(5, 2) == [3, 2]."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def in_order(sides, repeat: int) -> list:
    """A B in even rounds, B A in odd ones."""
    return list(sides) if repeat % 2 == 0 else list(reversed(sides))


def which_run(repeat: int | None, repeats: int) -> str:
    if repeat is None:
        return ", warm-up (discarded)"
    return f", repeat {repeat + 1}/{repeats}" if repeats > 1 else ""


def load_step(scheme: str, port: int, level: int, mode: str, requests: int, path: str, repeat: int | None = 0,
              repeats: int = 1, seconds: float = RUN_TIME_LIMIT_S) -> dict:
    """One ab-style run; `repeat` None is a warm-up."""
    return {"engine": "load", "scheme": scheme, "port": port, "level": level, "mode": mode, "requests": requests,
            "path": path, "work": requests, "repeat": repeat or 0, "warmup": repeat is None,
            "time_limit_s": seconds,
            "label": f"{scheme.upper()} c={level} n={requests} ({MODES[mode]}){which_run(repeat, repeats)}"}


def warmup_steps(schemes, ports: dict[str, int], levels: list[int], modes: list[str], requests: int,
                 path: str, seconds: float = RUN_TIME_LIMIT_S) -> list[dict]:
    concurrency = min(max(levels), WARMUP_CONCURRENCY)
    count = max(concurrency, min(requests, WARMUP_REQUESTS))
    return [load_step(scheme, ports[scheme], concurrency, mode, count, path, repeat=None, seconds=seconds)
            for mode in modes for scheme in schemes]


def load_steps(params: dict, ports: dict[str, int]) -> list[dict]:
    scheme, mode = params["scheme"], "keepalive" if params["keepalive"] else "new"
    repeats, seconds = params.get("repeats", 1), params.get("seconds", RUN_TIME_LIMIT_S)
    warmups = warmup_steps([scheme], ports, [params["concurrency"]], [mode], params["requests"], params["path"],
                           seconds)
    return warmups + [load_step(scheme, ports[scheme], params["concurrency"], mode, params["requests"],
                                params["path"], repeat=r, repeats=repeats, seconds=seconds) for r in range(repeats)]


def sweep_steps(params: dict, ports: dict[str, int]) -> list[dict]:
    """Warm-ups, then per round: every level and mode, HTTP and HTTPS back to back (order alternating)."""
    repeats, seconds = params.get("repeats", 1), params.get("seconds", RUN_TIME_LIMIT_S)
    steps = warmup_steps(SCHEMES, ports, params["levels"], params["modes"], params["requests"], params["path"],
                         seconds)
    for r in range(repeats):
        for level in params["levels"]:
            for mode in params["modes"]:
                steps += [load_step(scheme, ports[scheme], level, mode, params["requests"], params["path"],
                                    repeat=r, repeats=repeats, seconds=seconds) for scheme in in_order(SCHEMES, r)]
    return steps


def handshake_steps(params: dict, suites_by_version: dict[str, list[str]]) -> list[dict]:
    """Warm-ups, then per round every (agents level, version, suite) cell, versions interleaved and
    their order alternating; with `resume`, one resumed cell per version per round (its first suite,
    the first agents level). A version whose suite list is empty (the server accepts none of them)
    gets no cell; a version not in the dict, the server's default."""
    versions = [v for v in params["versions"] if suites_by_version.get(v, [None])]
    repeats, first_level = params.get("repeats", 1), params["agents_levels"][0]
    seconds = params.get("seconds", RUN_TIME_LIMIT_S)
    steps = [handshake_step(v, suites_by_version.get(v, [None])[0], min(WARMUP_AGENTS, first_level),
                            min(WARMUP_PER_AGENT, params["per_agent"]), resume=False, repeat=None, seconds=seconds)
             for v in versions]
    for r in range(repeats):
        order = in_order(versions, r)
        for agents in params["agents_levels"]:
            for version in order:
                for suite in suites_by_version.get(version, [None]):
                    steps.append(handshake_step(version, suite, agents, params["per_agent"], False, r, repeats,
                                                seconds))
        if params.get("resume"):
            for version in order:
                suite = suites_by_version.get(version, [None])[0]
                steps.append(handshake_step(version, suite, first_level, params["per_agent"], True, r, repeats,
                                            seconds))
    return steps


def handshake_step(version: str, suite: str | None, agents: int, per_agent: int, resume: bool,
                   repeat: int | None = 0, repeats: int = 1, seconds: float = RUN_TIME_LIMIT_S) -> dict:
    what = "resumed" if resume else "full"
    return {"engine": "handshake", "version": version, "suite": suite, "agents": agents, "per_agent": per_agent,
            "resume": resume, "work": agents * per_agent, "repeat": repeat or 0, "warmup": repeat is None,
            "time_limit_s": seconds,
            "label": f"TLS {version} {suite or 'default suite'}, {agents} agents × {per_agent} ({what})"
                     f"{which_run(repeat, repeats)}"}


def agent_shares(step: dict, agents: int) -> list[dict]:
    """What each agent task runs of `step`: its part of n and c, or of the handshake agents."""
    if step["engine"] == "load":
        concurrency = split(step["level"], agents)
        requests = split(step["requests"], len(concurrency))
        return [{"concurrency": c, "requests": n} for c, n in zip(concurrency, requests)]
    return [{"agents": a} for a in split(step["agents"], agents)]


# --- how long a plan can take, before it starts ------------------------------------------------------

def steps_of(kind: str, params: dict) -> list[dict]:
    """The steps a run of `kind` will take (handshakes: with every candidate suite the server may accept)."""
    ports = {"http": 80, "https": 443}   # only the steps' count and limits matter here
    if kind == "load":
        return load_steps(params, ports)
    if kind == "sweep":
        return sweep_steps(params, ports)
    worst = {v: list(params["suites"]) or [f"suite {i + 1}" for i in range(WORST_CASE_SUITES[v])]
             for v in params["versions"]}
    return handshake_steps(params, worst)


def bound_s(kind: str, params: dict) -> float:
    """The longest the run can take: set-up, then every step's time limit and its overhead."""
    return RUN_OVERHEAD_S + sum(step["time_limit_s"] + STEP_OVERHEAD_S for step in steps_of(kind, params))
