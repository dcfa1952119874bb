"""Validators shared by models, forms and the API (which validates through the same forms)."""

from django.core.exceptions import ValidationError

from tlsaudit.domain.text import control_character, describe


def no_control_characters(value) -> None:
    """A name is one line of plain text: no line break, tab or other control character (see domain/text.py)."""
    found = control_character(str(value))
    if found:
        position, char = found
        raise ValidationError(
            f"Use one line of plain text: character {position + 1} is a control character, {describe(char)}.",
            code="control_character")
