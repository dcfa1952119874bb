"""The schedule forms: a site's frequency and weekday, and the organization's start window."""

from django import forms
from django.core.exceptions import ValidationError

from tlsaudit.monitoring.models import SiteSchedule

WEEKDAYS = [(1, "Monday"), (2, "Tuesday"), (3, "Wednesday"), (4, "Thursday"), (5, "Friday"), (6, "Saturday"),
            (0, "Sunday")]  # cron numbering: 0 = Sunday
HOURS = [(h, f"{h:02d}:00") for h in range(24)]


class ScheduleForm(forms.Form):
    frequency = forms.ChoiceField(choices=SiteSchedule.Frequency.choices, error_messages={
        "invalid_choice": "Choose nightly, weekly or off.", "required": "Choose nightly, weekly or off."})
    weekday = forms.TypedChoiceField(choices=[("", "—")] + WEEKDAYS, coerce=int, required=False, empty_value=None,
                                     error_messages={"invalid_choice": "The weekday must be 0 (Sunday) to 6 (Saturday)."})

    def clean(self):
        data = super().clean()
        if data.get("frequency") == SiteSchedule.Frequency.WEEKLY and data.get("weekday") is None \
                and "weekday" not in self.errors:
            self.add_error("weekday", "Choose the weekday of the weekly audit.")
        return data


class WindowForm(forms.Form):
    start = forms.TypedChoiceField(label="From (UTC)", choices=HOURS, coerce=int, error_messages={
        "invalid_choice": "The start hour must be 0 to 23.", "required": "The start hour must be 0 to 23."})
    end = forms.TypedChoiceField(label="Until (UTC, excluded)", choices=HOURS, coerce=int, error_messages={
        "invalid_choice": "The end hour must be 0 to 23.", "required": "The end hour must be 0 to 23."})

    def clean(self):
        data = super().clean()
        if data.get("start") is not None and data.get("start") == data.get("end"):
            raise ValidationError("The window must not start and end at the same hour.")
        return data
