"""Create (once) the demo account `make run` prints, with an organization and a few sites."""

import secrets

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from tlsaudit.accounts.models import User
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership, Organization
from tlsaudit.sites.models import Site, Tag
from tlsaudit.sites.services import site_added

DEMO_EMAIL = "demo@tlsaudit.test"
DEMO_SITES = [("localhost", 8443, "Local test server", ["lab"]), ("example.com", 443, "Example", ["client-a"])]


class Command(BaseCommand):
    help = "Create the demo account, organization and sites if missing, and print how to log in."

    def handle(self, *args, **options):
        password_file = settings.VAR_DIR / "demo-password.txt"
        user = User.objects.filter(email=DEMO_EMAIL).first()
        if user is None or not password_file.exists():
            password = secrets.token_urlsafe(12)
            user = self._create(password)
            password_file.write_text(password + "\n")
        password = password_file.read_text().strip()
        self.stdout.write(self.style.SUCCESS(
            "\n  TLS Audit is starting on http://127.0.0.1:8000\n"
            f"  Demo login: {DEMO_EMAIL}  password: {password}\n"
            "  (or sign up with your own address: emails are printed on this console)\n"))

    @transaction.atomic
    def _create(self, password: str) -> User:
        user, _ = User.objects.get_or_create(email=DEMO_EMAIL, defaults={"full_name": "Demo User",
                                                                          "email_verified": True})
        user.set_password(password)
        user.save()
        org, _ = Organization.objects.get_or_create(slug="demo-agency", defaults={"name": "Demo Agency"})
        Membership.objects.get_or_create(organization=org, user=user, defaults={"role": roles.OWNER})
        for host, port, name, tags in DEMO_SITES:
            site, created = Site.objects.get_or_create(organization=org, hostname=host, https_port=port,
                                                       defaults={"name": name, "created_by": user})
            if created:
                site_added(site)
            site.tags.set([Tag.objects.get_or_create(organization=org, name=t)[0] for t in tags])
        user.last_org = org
        user.save(update_fields=["last_org"])
        return user
