"""Conditional GETs: an `ETag` on every object and list page, `If-None-Match` answered with 304.

The tag is a keyed hash (HMAC-SHA256 under SECRET_KEY) of the organization's id, the media type and the
exact bytes sent, so it is strong (same tag, same bytes) and costs one hash of a body that was rendered
anyway. It changes with anything that changes the body (`?fields=`, `?view=`, the page's cursor links),
and never matches across organizations: two organizations with identical pages (two empty site lists)
get different tags, and nobody can compute a tag without the server's key. It is checked only after
the request was authorised and its answer built, so a tag reveals nothing a 404 would hide.
"""

from django.http import HttpResponseNotModified
from django.utils.crypto import salted_hmac
from django.utils.http import parse_etags

SALT = "tlsaudit.api.etag"
# What a 304 keeps of the 200 it stands for (RFC 9110 15.4.5), and our own informational headers.
KEPT_ON_304 = ("ETag", "Cache-Control", "Vary", "Content-Location", "Expires", "Last-Modified",
               "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")


def etag_for(org_id, media_type: str, body: bytes) -> str:
    digest = salted_hmac(SALT, f"{org_id}\n{media_type}\n".encode() + body, algorithm="sha256").hexdigest()
    return f'"{digest[:40]}"'


def matches(request, etag: str) -> bool:
    """If-None-Match compares weakly (RFC 9110 13.1.2): W/"x" matches "x"; `*` matches any tag."""
    header = request.META.get("HTTP_IF_NONE_MATCH", "")
    if not header:
        return False
    tags = parse_etags(header)
    return "*" in tags or strip_weak(etag) in {strip_weak(tag) for tag in tags}


def strip_weak(tag: str) -> str:
    return tag[2:] if tag.startswith("W/") else tag


def not_modified(response) -> HttpResponseNotModified:
    answer = HttpResponseNotModified()
    for name in KEPT_ON_304:
        if name in response:
            answer[name] = response[name]
    return answer


def tag_when_rendered(request, org_id):
    """A post-render callback for a DRF Response: tags the rendered body, and answers 304 instead
    when the client already has it."""
    def tag(response):
        etag = etag_for(org_id, response.get("Content-Type", ""), response.content)
        response["ETag"] = etag
        return not_modified(response) if matches(request, etag) else None
    return tag


def is_taggable(request, response) -> bool:
    """GETs answered 200 with a body rendered in one piece (CSV exports stream: they get no tag)."""
    return (request.method in ("GET", "HEAD") and response.status_code == 200
            and hasattr(response, "add_post_render_callback") and not response.streaming)
