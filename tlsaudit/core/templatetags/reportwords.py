"""Report text that may come from older stored scans: shown in words, never as a Python repr."""

from django import template

from tlsaudit.domain import trustwords
from tlsaudit.domain.text import duration_words

register = template.Library()


@register.filter
def trust_words(error: str) -> str:
    """A trust store's refusal ('candidates exhausted…', '<Certificate(…)>') as one clause."""
    return trustwords.trust_error_words(error or "")


@register.filter
def trust_summary(results) -> str:
    """Every store's verdict in one sentence, stores that agree named together."""
    return trustwords.trust_summary(results)


@register.filter
def took(started, finished) -> str:
    """{{ run.started_at|took:run.finished_at }}: '0.4 s', '2 min 5 s'."""
    if not (started and finished):
        return ""
    return duration_words(max(0.0, (finished - started).total_seconds()))
