from django import forms

from tlsaudit.domain import customca, roles
from tlsaudit.orgs.models import Organization


class OrganizationForm(forms.ModelForm):
    alert_email = forms.EmailField(
        label="Alerts go to", required=False,
        help_text="Expiring certificates, grade drops and new weaknesses are emailed here (you, unless you "
                  "choose someone else). More recipients, or none, on the Alerts page.")

    class Meta:
        model = Organization
        fields = ["name"]

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if len(name) < 2:
            raise forms.ValidationError("Use at least 2 characters for the organization's name.")
        return name


class OrganizationSettingsForm(OrganizationForm):
    alert_email = None   # asked when the organization is created; the alerts page changes it later
    custom_ca_file = forms.FileField(
        required=False, label="…or upload a PEM file",
        help_text="Its certificates are added to those above (a .pem or .crt file of CA certificates).")

    # Inherits clean_name: renaming follows the same rule as creating.
    class Meta:
        model = Organization
        fields = ["name", "custom_ca_pem"]
        widgets = {"custom_ca_pem": forms.Textarea(attrs={"rows": 6, "placeholder": "-----BEGIN CERTIFICATE-----"})}
        labels = {"custom_ca_pem": "Custom CA certificates (PEM)"}

    def clean(self):
        cleaned = super().clean()
        upload = cleaned.get("custom_ca_file")
        if upload and "custom_ca_pem" not in self.errors:
            try:
                text = upload.read(customca.MAX_CHARS + 1).decode("ascii")
            except UnicodeDecodeError:
                self.add_error("custom_ca_file", "This file is not PEM text: export the CA as PEM (Base64).")
                return cleaned
            self.cleaned_data["custom_ca_pem"] = (cleaned.get("custom_ca_pem", "") + "\n" + text).strip()
            try:
                self.cleaned_data["custom_ca_pem"] = self.clean_custom_ca_pem()
            except forms.ValidationError as exc:
                self.add_error("custom_ca_file", exc)
        return cleaned

    def clean_custom_ca_pem(self):
        pem = self.cleaned_data["custom_ca_pem"].strip()
        if not pem:
            return ""
        if problem := customca.too_long(len(pem)):
            raise forms.ValidationError(problem)
        from cryptography import x509

        try:
            certs = x509.load_pem_x509_certificates(pem.encode())
        except ValueError:
            raise forms.ValidationError("This is not a PEM certificate: paste one or more "
                                        "-----BEGIN CERTIFICATE----- blocks.") from None
        if problem := customca.too_many(len(certs)):
            raise forms.ValidationError(problem)
        if leaves := [c for c in certs if not _is_ca(c)]:
            raise forms.ValidationError(
                f"Only CA certificates can be trusted: {leaves[0].subject.rfc4514_string()[:120]} is not a CA "
                f"(no basicConstraints CA:TRUE){' and ' + str(len(leaves) - 1) + ' more' if len(leaves) > 1 else ''}.")
        return "\n".join(c.public_bytes(encoding=_pem()).decode() for c in certs)


def _is_ca(cert) -> bool:
    """basicConstraints CA:TRUE; a version 1 certificate (no extensions at all) counts when self-signed,
    as old private roots are."""
    from cryptography import x509

    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return cert.version == x509.Version.v1 and cert.issuer == cert.subject


def ca_certificates(pem: str) -> list[dict]:
    """The certificates of a stored (already checked) custom CA, as the settings page and the API list them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    certs = x509.load_pem_x509_certificates(pem.encode()) if pem.strip() else []
    return [{"subject": cert.subject.rfc4514_string(), "issuer": cert.issuer.rfc4514_string(),
             "not_before": cert.not_valid_before_utc, "not_after": cert.not_valid_after_utc,
             "fingerprint_sha256": cert.fingerprint(hashes.SHA256()).hex()} for cert in certs]


def _pem():
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.PEM


class InviteForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=roles.ROLE_CHOICES, initial=roles.MEMBER)

    def __init__(self, *args, org, actor_role, **kwargs):
        super().__init__(*args, **kwargs)
        self.org = org
        self.actor_role = actor_role

    def clean_email(self):
        email = self.cleaned_data["email"].strip().lower()
        if self.org.memberships.filter(user__email__iexact=email).exists():
            raise forms.ValidationError(f"{email} is already a member of {self.org.name}.")
        return email

    def clean_role(self):
        role = self.cleaned_data["role"]
        if not roles.can_assign(self.actor_role, role):
            raise forms.ValidationError(f"As {self.actor_role} you cannot invite someone as {role}.")
        return role


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=roles.ROLE_CHOICES)
