"""What one page load did on the network, from Chrome DevTools Protocol events.

Navigation Timing's `transferSize` is not wire bytes (body + a flat 300), so requests, bytes, cache
hits and 304s come from CDP `Network.*` events: one row per request *hop* (a redirect is a row, as in
DevTools), bytes = `loadingFinished.encodedDataLength` (headers + body as received, after HPACK) plus
each redirect response's `encodedDataLength`; a 304 is only visible in `responseReceivedExtraInfo`
(`responseReceived` reports the cached 200). `data:` and `blob:` URLs are not requests on the wire.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

NETWORK_EVENTS = ("requestWillBeSent", "requestServedFromCache", "responseReceived", "responseReceivedExtraInfo",
                  "loadingFinished", "loadingFailed")
MIXED_CONSOLE = re.compile(r"Mixed Content: .*? requested an insecure \w+ '([^']+)'")


@dataclass
class Hop:
    request_id: str
    url: str
    type: str
    start: float                 # CDP monotonic seconds
    end: float | None = None
    status: int | None = None
    bytes: int = 0
    from_cache: bool = False
    protocol: str = ""
    failed: str | None = None
    done: bool = False


@dataclass
class Recorder:
    hops: list[Hop] = field(default_factory=list)
    current: dict[str, Hop] = field(default_factory=dict)      # requestId -> its latest hop
    wire_status: dict[str, list[int]] = field(default_factory=dict)
    main_id: str | None = None
    main_response: dict | None = None
    mixed: list[str] = field(default_factory=list)

    def attach(self, cdp, page) -> None:
        for name in NETWORK_EVENTS:
            cdp.on(f"Network.{name}", getattr(self, f"on_{name}"))
        cdp.on("Audits.issueAdded", self.on_issue)
        page.on("console", self.on_console)

    def reset(self) -> None:
        self.hops, self.current, self.wire_status = [], {}, {}
        self.main_id, self.main_response, self.mixed = None, None, []

    # --- events --------------------------------------------------------------------------------
    def on_requestWillBeSent(self, event: dict) -> None:  # noqa: N802 — CDP event names
        url = event["request"]["url"]
        if url.startswith(("data:", "blob:")):
            return
        rid = event["requestId"]
        previous = self.current.get(rid)
        redirect = event.get("redirectResponse")
        if previous is not None and redirect is not None:
            previous.status = redirect.get("status")
            previous.bytes = int(redirect.get("encodedDataLength") or 0)
            previous.protocol = redirect.get("protocol", "")
            previous.end, previous.done = event["timestamp"], True
        if self.main_id is None and event.get("type") == "Document" and rid == event.get("loaderId"):
            self.main_id = rid
        if event["request"].get("mixedContentType") in ("blockable", "optionally-blockable"):
            self.note_mixed(url)
        hop = Hop(rid, url, event.get("type", "Other"), event["timestamp"])
        self.hops.append(hop)
        self.current[rid] = hop

    def on_requestServedFromCache(self, event: dict) -> None:  # noqa: N802
        if hop := self.current.get(event["requestId"]):
            hop.from_cache = True

    def on_responseReceived(self, event: dict) -> None:  # noqa: N802
        hop = self.current.get(event["requestId"])
        if hop is None:
            return
        response = event["response"]
        hop.status = response.get("status")
        hop.protocol = response.get("protocol", "")
        if response.get("fromDiskCache") or response.get("fromPrefetchCache"):
            hop.from_cache = True
        if event["requestId"] == self.main_id:
            self.main_response = response

    def on_responseReceivedExtraInfo(self, event: dict) -> None:  # noqa: N802
        self.wire_status.setdefault(event["requestId"], []).append(event.get("statusCode"))

    def on_loadingFinished(self, event: dict) -> None:  # noqa: N802
        if hop := self.current.get(event["requestId"]):
            hop.bytes = int(event.get("encodedDataLength") or 0)
            hop.end, hop.done = event["timestamp"], True

    def on_loadingFailed(self, event: dict) -> None:  # noqa: N802
        if hop := self.current.get(event["requestId"]):
            hop.failed = "canceled" if event.get("canceled") else event.get("errorText") or "failed"
            hop.end, hop.done = event["timestamp"], True

    def on_issue(self, event: dict) -> None:
        issue = event.get("issue", {})
        if issue.get("code") == "MixedContentIssue":
            self.note_mixed(issue.get("details", {}).get("mixedContentIssueDetails", {}).get("insecureURL", ""))

    def on_console(self, message) -> None:
        if match := MIXED_CONSOLE.search(message.text):
            self.note_mixed(match.group(1))

    def note_mixed(self, url: str) -> None:
        if url and url not in self.mixed:
            self.mixed.append(url)

    # --- results -------------------------------------------------------------------------------
    def pending(self) -> int:
        return sum(1 for hop in self.current.values() if not hop.done)

    def settle(self, page, seconds: float = 1.0) -> None:
        """Let the last loadingFinished events arrive (they can trail the load event by a few ms)."""
        deadline = time.monotonic() + seconds
        while self.pending() and time.monotonic() < deadline:
            page.wait_for_timeout(10)

    def redirect_chain(self) -> list[str]:
        return [hop.url for hop in self.hops if hop.request_id == self.main_id]

    def not_modified_ids(self) -> set[str]:
        return {rid for rid, codes in self.wire_status.items() if codes and codes[-1] == 304}

    def counts(self) -> dict:
        revalidated = self.not_modified_ids()
        statuses: dict[str, int] = {}
        for hop in self.hops:
            status = 304 if hop.request_id in revalidated and hop is self.current[hop.request_id] else hop.status
            if status is not None:
                statuses[str(status)] = statuses.get(str(status), 0) + 1
        return {
            "requests": len(self.hops),
            "bytes": sum(hop.bytes for hop in self.hops),
            "from_cache": sum(1 for hop in self.hops if hop.from_cache),
            "not_modified": statuses.get("304", 0),
            "statuses": dict(sorted(statuses.items())),
            "failed": sum(1 for hop in self.hops if hop.failed and hop.failed != "canceled"),
        }

    def waterfall(self) -> list[dict]:
        if not self.hops:
            return []
        origin = self.hops[0].start
        revalidated = self.not_modified_ids()
        return [{
            "url": hop.url, "type": hop.type,
            "status": 304 if hop.request_id in revalidated and hop is self.current[hop.request_id] else hop.status,
            "start_ms": ms(hop.start - origin), "end_ms": ms((hop.end or hop.start) - origin),
            "bytes": hop.bytes, "from_cache": hop.from_cache, "protocol": hop.protocol,
            **({"error": hop.failed} if hop.failed else {}),
        } for hop in self.hops]

    def main_tls(self) -> dict | None:
        details = (self.main_response or {}).get("securityDetails")
        if not details:
            return None
        return {"protocol": details.get("protocol", ""), "cipher": details.get("cipher", ""),
                "key_exchange_group": details.get("keyExchangeGroup", "")}

    def redirect_ms(self) -> float:
        chain = [hop for hop in self.hops if hop.request_id == self.main_id]
        return ms(chain[-1].start - chain[0].start) if len(chain) > 1 else 0.0


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 1)
