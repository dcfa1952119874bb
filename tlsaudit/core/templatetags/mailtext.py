"""`{{ org.name|oneline }}`: a name as one bounded line in an email, whatever an old row holds."""

from django import template

from tlsaudit.domain.text import single_line

register = template.Library()


@register.filter
def oneline(value, limit=120):
    return single_line("" if value is None else value, int(limit))
