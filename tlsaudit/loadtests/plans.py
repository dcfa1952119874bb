"""Turn a run's validated params into steps, and a step into agent shares. Pure: plain dicts.

A step is one ab-style run (load, one sweep level/scheme/mode) or one handshake cell; steps run
one after another (so they never compete for the same CPU), each split over agent tasks.
"""

from __future__ import annotations

MODES = {"new": "new connection per request", "keepalive": "keep-alive"}


def split(total: int, parts: int) -> list[int]:
    """`total` in `parts` near-equal positive shares, larger first: split(5, 2) == [3, 2]."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def load_step(scheme: str, port: int, level: int, mode: str, requests: int, path: str) -> dict:
    return {"engine": "load", "scheme": scheme, "port": port, "level": level, "mode": mode, "requests": requests,
            "path": path, "work": requests,
            "label": f"{scheme.upper()} c={level} n={requests} ({MODES[mode]})"}


def load_steps(params: dict, ports: dict[str, int]) -> list[dict]:
    return [load_step(params["scheme"], ports[params["scheme"]], params["concurrency"],
                      "keepalive" if params["keepalive"] else "new", params["requests"], params["path"])]


def sweep_steps(params: dict, ports: dict[str, int]) -> list[dict]:
    """HTTP then HTTPS at each level and mode, interleaved so drift on the machine hits both alike."""
    return [load_step(scheme, ports[scheme], level, mode, params["requests"], params["path"])
            for level in params["levels"] for mode in params["modes"] for scheme in ("http", "https")]


def handshake_steps(params: dict, suites_by_version: dict[str, list[str]]) -> list[dict]:
    """Every (agents level, version, suite) cell, versions interleaved; with `resume`, one resumed
    cell per version (its first suite, the first agents level). A version whose suite list is
    empty (the server accepts none of them) gets no cell; a version not in the dict, the server's default."""
    versions = [v for v in params["versions"] if suites_by_version.get(v, [None])]
    steps = []
    for agents in params["agents_levels"]:
        for version in versions:
            for suite in suites_by_version.get(version, [None]):
                steps.append(handshake_step(version, suite, agents, params["per_agent"], resume=False))
    if params.get("resume"):
        for version in versions:
            suite = suites_by_version.get(version, [None])[0]
            steps.append(handshake_step(version, suite, params["agents_levels"][0], params["per_agent"], resume=True))
    return steps


def handshake_step(version: str, suite: str | None, agents: int, per_agent: int, resume: bool) -> dict:
    what = "resumed" if resume else "full"
    return {"engine": "handshake", "version": version, "suite": suite, "agents": agents, "per_agent": per_agent,
            "resume": resume, "work": agents * per_agent,
            "label": f"TLS {version} {suite or 'default suite'}, {agents} agents × {per_agent} ({what})"}


def agent_shares(step: dict, agents: int) -> list[dict]:
    """What each agent task runs of `step`: its part of n and c, or of the handshake agents."""
    if step["engine"] == "load":
        concurrency = split(step["level"], agents)
        requests = split(step["requests"], len(concurrency))
        return [{"concurrency": c, "requests": n} for c, n in zip(concurrency, requests)]
    return [{"agents": a} for a in split(step["agents"], agents)]
