"""URLs of API objects for serializers that emit one or two per row.

`reverse()` runs the URL resolver and reads thread-locals: two per row were a quarter of the
time of a 200-row audits page. An object's path differs from its neighbours' only by its id, so
each route is reversed once (per script prefix) with a placeholder id, and rows fill theirs in.
"""

from __future__ import annotations

from functools import lru_cache

from django.urls import get_script_prefix, reverse

PLACEHOLDER = 987654321987  # an id no route's own text contains


# Where the API shows each kind of work it starts (a webhook delivery: in its webhook's deliveries).
DETAIL_ROUTES = {"audits.audit": "api:audit-detail", "loadtests.perfrun": "api:loadtest-detail",
                 "probes.probe": "api:probe-detail", "reports.report": "api:report-detail"}


def api_url(row) -> str:
    """The API URL of a row of work (an audit, a run, a probe, a report, a webhook delivery)."""
    if row._meta.label_lower == "alerts.webhookdelivery":
        return object_url("api:webhook-deliveries", row.webhook_id)
    return object_url(DETAIL_ROUTES[row._meta.label_lower], row.pk)


def object_url(name: str, pk: int) -> str:
    """reverse(name, args=[pk]), for a route whose only argument is an object's id."""
    before, after = _template(name, get_script_prefix())
    return f"{before}{pk}{after}"


@lru_cache(maxsize=64)
def _template(name: str, script_prefix: str) -> tuple[str, str]:
    before, marker, after = reverse(name, args=[PLACEHOLDER]).partition(str(PLACEHOLDER))
    if not marker:
        raise ValueError(f"route {name} does not put its argument in the path")
    return before, after
