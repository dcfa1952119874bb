"""Re-derive grades, findings and recommendations of stored audits from their kept inputs."""

from django.core.management.base import BaseCommand

from tlsaudit.audits.models import Audit
from tlsaudit.audits.services import apply_report, done_summary, update_site_summary
from tlsaudit.domain.audit_report import RULES_VERSION
from tlsaudit.sites.models import Site


class Command(BaseCommand):
    help = "Re-grade finished audits whose rules version differs from the current one (or all with --all)."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="re-grade every finished audit")

    def handle(self, *args, **options):
        audits = Audit.objects.filter(status=Audit.Status.DONE, facts__isnull=False)
        if not options["all"]:
            audits = audits.exclude(rules_version=RULES_VERSION)
        changed, sites = 0, set()
        for audit in audits.iterator(chunk_size=200):
            before = audit.grade
            apply_report(audit)
            changed += before != audit.grade
            sites.add(audit.site_id)
            if audit.site.last_audit_id == audit.pk:
                update_site_summary(audit)
        for site_id in sites:  # scores of the last two done audits may both have moved
            Site.objects.filter(pk=site_id).update(**done_summary(site_id))
        self.stdout.write(f"Re-graded {audits.count()} audits with rules {RULES_VERSION}; {changed} changed grade.")
