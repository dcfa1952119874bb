from django import forms

from tlsaudit.api.models import ApiKey
from tlsaudit.core.validators import no_control_characters

MAX_ACTIVE_KEYS = 50


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=80, validators=[no_control_characters],
                           help_text="What uses it, e.g. “agency CRM sync”.")
    scope = forms.ChoiceField(choices=ApiKey.Scope.choices, initial=ApiKey.Scope.READ_ONLY,
                              help_text="Read-only keys can list and fetch; read-write keys can also add sites "
                                        "and start audits, tests and reports.")
    rate_per_minute = forms.IntegerField(required=False, min_value=1, max_value=100000, label="Requests per minute",
                                         help_text="Leave empty for the default limit.")

    def __init__(self, *args, org, **kwargs):
        super().__init__(*args, **kwargs)
        self.org = org

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the key a name.")
        if ApiKey.objects.filter(organization=self.org, name=name, revoked_at__isnull=True).exists():
            raise forms.ValidationError("An active key already has this name.")
        return name

    def clean(self):
        data = super().clean()
        active = ApiKey.objects.filter(organization=self.org, revoked_at__isnull=True).count()
        if active >= MAX_ACTIVE_KEYS:
            raise forms.ValidationError(f"This organization has {active} active keys, the most allowed: "
                                        "revoke one first.")
        return data
