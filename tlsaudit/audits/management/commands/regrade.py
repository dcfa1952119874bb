"""Re-derive grades, findings and recommendations of stored audits from their kept inputs."""

from django.core.management.base import BaseCommand

from tlsaudit.audits.models import Audit
from tlsaudit.audits.services import apply_report, update_site_summary
from tlsaudit.domain.audit_report import RULES_VERSION


class Command(BaseCommand):
    help = "Re-grade finished audits whose rules version differs from the current one (or all with --all)."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="re-grade every finished audit")

    def handle(self, *args, **options):
        audits = Audit.objects.filter(status=Audit.Status.DONE, facts__isnull=False)
        if not options["all"]:
            audits = audits.exclude(rules_version=RULES_VERSION)
        changed = 0
        for audit in audits.iterator(chunk_size=200):
            before = audit.grade
            apply_report(audit)
            changed += before != audit.grade
            if audit.site.last_audit_id == audit.pk:
                update_site_summary(audit)
        self.stdout.write(f"Re-graded {audits.count()} audits with rules {RULES_VERSION}; {changed} changed grade.")
