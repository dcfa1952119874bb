import secrets

from django.conf import settings
from django.core.validators import MaxLengthValidator
from django.db import models
from django.utils import timezone
from django.utils.text import slugify

from tlsaudit.core.validators import no_control_characters
from tlsaudit.domain import customca, roles


class Organization(models.Model):
    """An agency or a company. Every site belongs to exactly one."""

    name = models.CharField(max_length=120, validators=[no_control_characters])
    slug = models.SlugField(max_length=60, unique=True)
    custom_ca_pem = models.TextField(
        blank=True, validators=[MaxLengthValidator(customca.MAX_CHARS)],
        help_text=f"PEM CA certificate(s) to trust in addition to the public stores (internal PKI): at most "
                  f"{customca.MAX_CERTIFICATES}.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = unique_slug(self.name)
        super().save(*args, **kwargs)


# Path segments under /orgs/ that an organization's slug must not take (see orgs/urls.py).
RESERVED_SLUGS = {"new", "invitations"}


def unique_slug(name: str) -> str:
    base = slugify(name)[:50] or "org"
    slug, n = base, 1
    while slug in RESERVED_SLUGS or Organization.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


class Membership(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=roles.ROLE_CHOICES, default=roles.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "user"], name="one_membership_per_org")]
        ordering = ["organization__name", "user__email"]

    def __str__(self):
        return f"{self.user} in {self.organization} ({self.role})"


def new_token() -> str:
    return secrets.token_urlsafe(32)


class Invitation(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=roles.ROLE_CHOICES, default=roles.MEMBER)
    token = models.CharField(max_length=64, unique=True, default=new_token)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.email} → {self.organization} ({self.role})"

    @property
    def is_expired(self) -> bool:
        age = timezone.now() - self.created_at
        return age.days >= settings.INVITATION_MAX_AGE_DAYS

    @property
    def is_pending(self) -> bool:
        return self.accepted_at is None and not self.is_expired
