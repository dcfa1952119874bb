"""The organization's report branding: a logo upload and the accent colour (settings page)."""

import base64

from django import forms

from tlsaudit.alerts.forms import address_list
from tlsaudit.domain import images
from tlsaudit.reports.models import MAX_DIGEST_RECIPIENTS, MAX_LOGO_BYTES, ReportBranding, ReportSchedule

# PNG and JPEG only, told by their first bytes (not the browser's content type). No SVG: an SVG is a
# document that can carry script and external references, and the logo is inlined into every PDF.
LOGO_TYPES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


def logo_media_type(data: bytes) -> str | None:
    return next((media for magic, media in LOGO_TYPES if data.startswith(magic)), None)


class BrandingForm(forms.ModelForm):
    logo = forms.FileField(required=False, label="Logo (PNG or JPEG, at most 200 KB)",
                           help_text="Printed at the top of the site and portfolio PDF reports.")
    remove_logo = forms.BooleanField(required=False, label="Remove the current logo")

    class Meta:
        model = ReportBranding
        fields = ["accent_color"]
        labels = {"accent_color": "Report accent colour"}

    def clean_logo(self):
        upload = self.cleaned_data.get("logo")
        if not upload:
            return None
        if upload.size > MAX_LOGO_BYTES:
            raise forms.ValidationError(f"The logo is {upload.size:,} bytes: at most {MAX_LOGO_BYTES:,}.")
        data = upload.read()
        media = logo_media_type(data)
        if media is None:
            raise forms.ValidationError("This is not a PNG or JPEG image.")
        if problem := images.too_large(data):
            raise forms.ValidationError(problem)
        return f"data:{media};base64,{base64.b64encode(data).decode()}"

    def save(self, commit=True):
        branding = super().save(commit=False)
        if self.cleaned_data.get("logo"):
            branding.logo_data_uri = self.cleaned_data["logo"]
        elif self.cleaned_data.get("remove_logo"):
            branding.logo_data_uri = ""
        if commit:
            branding.save()
        return branding


class DigestForm(forms.ModelForm):
    recipients = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4, "placeholder": "client@example.com"}),
        help_text=f"One address per line (or comma-separated), at most {MAX_DIGEST_RECIPIENTS}. They need no account.")

    class Meta:
        model = ReportSchedule
        fields = ["frequency", "recipients"]
        labels = {"frequency": "Send the portfolio PDF"}
        help_texts = {"frequency": "Sent at 06:00 UTC: weekly on Mondays, monthly on the 1st; the first one at the next "
                                   "06:00 UTC after you turn it on."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["recipients"] = "\n".join(self.instance.recipients)

    def clean_recipients(self):
        return address_list(self.cleaned_data["recipients"], MAX_DIGEST_RECIPIENTS)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("frequency", ReportSchedule.Frequency.OFF) != ReportSchedule.Frequency.OFF \
                and not cleaned.get("recipients"):
            self.add_error("recipients", "Add at least one recipient, or set the digest to Off.")
        return cleaned
