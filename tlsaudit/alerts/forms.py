import re

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from tlsaudit.alerts import webhooks
from tlsaudit.alerts.models import AlertSettings, Webhook
from tlsaudit.domain import alerts as rules

MAX_RECIPIENTS = 20
MAX_WEBHOOKS = 10


class AlertSettingsForm(forms.ModelForm):
    recipients = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4, "placeholder": "ops@example.com"}),
        help_text=f"One address per line (or comma-separated), at most {MAX_RECIPIENTS}.")
    kinds = forms.MultipleChoiceField(choices=rules.KIND_CHOICES, required=False, widget=forms.CheckboxSelectMultiple,
                                      label="Send alerts for")

    class Meta:
        model = AlertSettings
        fields = ["recipients", "kinds", "renewal_share_pct", "backstop_days"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["recipients"] = "\n".join(self.instance.recipients)

    def clean_recipients(self):
        return address_list(self.cleaned_data["recipients"], MAX_RECIPIENTS)


def address_list(text: str, limit: int) -> list[str]:
    """Email addresses typed one per line or separated by commas or semicolons: each once, lower-cased,
    at most `limit`; a ValidationError names the ones that are not addresses."""
    addresses = list(dict.fromkeys(a.strip().lower() for a in re.split(r"[\s,;]+", text) if a.strip()))
    bad = []
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            bad.append(address)
    if bad:
        raise ValidationError(f"Not an email address: {', '.join(bad)}.")
    if len(addresses) > limit:
        raise ValidationError(f"At most {limit} recipients ({len(addresses)} given).")
    return addresses


class WebhookForm(forms.ModelForm):
    url = forms.URLField(label="Webhook URL", max_length=500, assume_scheme="https",
                         widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.com/tlsaudit"}))

    class Meta:
        model = Webhook
        fields = ["url"]

    def __init__(self, *args, org, **kwargs):
        super().__init__(*args, **kwargs)
        self.org = org

    def clean_url(self):
        url = self.cleaned_data["url"]
        # Not counting the webhook being edited (the API changes URLs of existing webhooks).
        if Webhook.objects.filter(organization=self.org).exclude(pk=self.instance.pk).count() >= MAX_WEBHOOKS:
            raise ValidationError(f"An organization can have at most {MAX_WEBHOOKS} webhooks.")
        try:
            webhooks.check_url(url)
        except webhooks.UnsafeURL as exc:
            raise ValidationError(str(exc)) from None
        others = Webhook.objects.filter(organization=self.org).exclude(pk=self.instance.pk)
        if any(webhooks.same_receiver(url, other.url) for other in others):
            # Each copy would carry the same event id under its own secret: a receiver that checks one
            # secret rejects every other copy.
            raise ValidationError("This organization already sends to this URL: each event would arrive twice, "
                                  "signed with two secrets. Use the existing webhook, or delete it first.",
                                  code="duplicate")
        return url
