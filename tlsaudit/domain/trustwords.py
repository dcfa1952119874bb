"""Why a trust store refused a certificate chain, in words.

sslyze passes on the message of cryptography's verifier as is, Python reprs included:
"validation failed: cert is not valid at validation time (encountered processing
<Certificate(subject=<Name(CN=x)>, ...)>)". Reports (page, PDF, CSV, JSON, CLI) show the reason
once, in words, and name the stores that share it together instead of repeating it per store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# cryptography's wording -> ours. The first match wins; the texts come from its Rust verifier.
REASONS = (
    ("not valid at validation time", "a certificate is outside its validity dates"),
    ("candidates exhausted", "no chain to a root this store trusts"),
    ("subjectaltname", "the certificate does not cover the host name"),
    ("hostname", "the certificate does not cover the host name"),
    ("signature", "a signature in the chain does not verify"),
    ("basicconstraints", "an issuer in the chain is not allowed to issue certificates"),
    ("path length", "the chain is longer than an issuer allows"),
    ("key usage", "a certificate's key usage does not allow this use"),
)
CERT_REPR = re.compile(r"<Certificate\(subject=<Name\((?P<name>[^)]*)\)>[^>]*\)>")
ANY_REPR = re.compile(r"<\w+\([^<>]*\)>")
DATES = REASONS[0][1]


def trust_error_words(error: str) -> str:
    """One short clause for a store's refusal; '' for no error. Text that matches none of REASONS
    keeps its words, with any Python repr replaced by the certificate's name."""
    if not error:
        return ""
    lowered = error.lower()
    for needle, words in REASONS:
        if needle in lowered:
            return words
    text = CERT_REPR.sub(lambda m: m["name"], error)
    while ANY_REPR.search(text):
        text = ANY_REPR.sub("a certificate", text)
    return re.sub(r"^validation failed:\s*", "", text).strip()


def is_dates_error(error: str) -> bool:
    return trust_error_words(error) == DATES


def has_repr(text: str) -> bool:
    """Does `text` carry a Python object repr ('<Certificate(...)>', '<Name(CN=x)>')? For tests and checks."""
    return bool(re.search(r"<[A-Z]\w*\(", text))


def trust_summary(results: Iterable) -> str:
    """'trusted by Custom CA; not trusted by Android, Apple, Mozilla: no chain to a root this store
    trusts'. `results` are TrustResults; stores that refuse for the same reason are named together."""
    results = list(results)
    trusted, refused = [], {}
    for t in results:
        if t.trusted:
            trusted.append(t.store)
        else:
            refused.setdefault(once_each(trust_error_words(t.error)) or "not trusted", []).append(t.store)
    parts = [f"trusted by {', '.join(trusted)}"] if trusted else []
    for reason, stores in refused.items():
        apart = " (trusted apart from the dates)" if all_dates_only(results, stores) else ""
        parts.append(f"not trusted by {', '.join(stores)}: {reason}{apart}")
    return "; ".join(parts)


def once_each(words: str) -> str:
    """Each clause of "A, and B" once: audits stored before the fix said the dates twice."""
    return ", and ".join(dict.fromkeys(words.split(", and "))) if words else words


def all_dates_only(results: Iterable, stores: list[str]) -> bool:
    picked = [t for t in results if t.store in stores]
    return bool(picked) and all(getattr(t, "dates_only", False) for t in picked)
