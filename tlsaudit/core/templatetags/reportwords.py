"""Report text that may come from older stored scans: shown in words, never as a Python repr."""

from django import template

from tlsaudit.domain.trustwords import trust_error_words

register = template.Library()


@register.filter
def trust_words(error: str) -> str:
    """A trust store's refusal ('candidates exhausted…', '<Certificate(…)>') as one clause."""
    return trust_error_words(error or "")
