"""`manage.py create_api_key --org SLUG --name NAME [--scope rw|ro] [--rate N]`: prints the key.

For provisioning scripts and the API quick start; the dashboard does the same for people."""

from django.core.management.base import BaseCommand, CommandError

from tlsaudit.api import keys
from tlsaudit.api.services import create_key
from tlsaudit.core.auditlog import record
from tlsaudit.orgs.models import Organization


class Command(BaseCommand):
    help = "Create an organization API key and print it (once: only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="Organization slug.")
        parser.add_argument("--name", required=True, help="What the key is for.")
        parser.add_argument("--scope", choices=[keys.READ_WRITE, keys.READ_ONLY], default=keys.READ_ONLY,
                            help="rw (read-write) or ro (read-only, the default).")
        parser.add_argument("--rate", type=int, default=None, help="Requests per minute for this key.")

    def handle(self, *args, org, name, scope, rate, **options):
        organization = Organization.objects.filter(slug=org).first()
        if organization is None:
            raise CommandError(f"No organization with the slug {org!r}.")
        if not name.strip():
            raise CommandError("--name must not be empty.")
        if rate is not None and not 1 <= rate <= 100000:
            raise CommandError("--rate must be from 1 to 100000 requests per minute.")
        key, plaintext = create_key(organization, name=name.strip(), scope=scope, rate_per_minute=rate)
        record("api_key.created", org=organization, target=key.name, key_prefix=key.display_prefix, scope=scope,
               via="manage.py create_api_key")
        self.stdout.write(plaintext)
