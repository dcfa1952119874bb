"""The emailed PDF digest (read, change, send now) and the nightly audits run now: what the dashboard's
Digests page and the portfolio's "Run tonight's audits now" do, for owners, admins and read-write keys.
Recipients' addresses and delivery errors are hidden from viewers and read-only keys, as alert targets are."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from tlsaudit.api.base import OrgView
from tlsaudit.api.errors import Conflict
from tlsaudit.api.idempotency import idempotent
from tlsaudit.api.logging import log
from tlsaudit.api.views.common import IDEMPOTENCY_PARAM, NOT_QUEUED, accepted, over_quota
from tlsaudit.core.queue import enqueue
from tlsaudit.domain import roles
from tlsaudit.monitoring import schedules
from tlsaudit.monitoring.views import RUN_NEXT_NOW_TASK
from tlsaudit.reports import digests
from tlsaudit.reports.forms import DigestForm
from tlsaudit.reports.models import DigestDelivery, ReportSchedule
from tlsaudit.reports.views import RECENT_DELIVERIES

MANAGE = "manage_org"   # as the dashboard's Digests page and audit window


class DigestDeliverySerializer(serializers.Serializer):
    period = serializers.CharField(help_text='"2026-W47", "2026-11", or "now-20261130T0135" for a digest sent now.')
    recipient = serializers.EmailField(allow_null=True, help_text="null for viewers and read-only keys.")
    status = serializers.ChoiceField(choices=DigestDelivery.Status.choices)
    error = serializers.CharField(allow_null=True, help_text="Why it failed; null for viewers and read-only keys.")
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DigestSerializer(serializers.Serializer):
    frequency = serializers.ChoiceField(choices=ReportSchedule.Frequency.choices,
                                        help_text="Sent at 06:00 UTC: weekly on Mondays, monthly on the 1st.")
    recipients = serializers.ListField(child=serializers.EmailField(), allow_null=True,
                                       help_text="null for viewers and read-only keys (see recipient_count).")
    recipient_count = serializers.IntegerField(read_only=True)
    last_period = serializers.CharField(read_only=True, help_text="The last week or month a digest was sent for.")
    sent_now_at = serializers.DateTimeField(read_only=True, allow_null=True)
    deliveries = DigestDeliverySerializer(many=True, read_only=True,
                                          help_text=f"The {RECENT_DELIVERIES} most recent, newest first.")


class DigestWriteSerializer(serializers.Serializer):
    frequency = serializers.ChoiceField(choices=ReportSchedule.Frequency.choices)
    recipients = serializers.ListField(child=serializers.CharField(max_length=254), max_length=100)


def digest_body(org, schedule: ReportSchedule) -> dict:
    may_see = roles.can(org.role, "see_alert_targets")
    deliveries = DigestDelivery.objects.filter(organization=org).order_by("-created_at")[:RECENT_DELIVERIES]
    return {"frequency": schedule.frequency, "recipients": schedule.recipients if may_see else None,
            "recipient_count": len(schedule.recipients), "last_period": schedule.last_sent_period,
            "sent_now_at": schedule.sent_now_at,
            "deliveries": [{"period": d.period, "recipient": d.recipient if may_see else None, "status": d.status,
                            "error": (d.error or None) if may_see else None, "attempts": d.attempts,
                            "created_at": d.created_at, "updated_at": d.updated_at} for d in deliveries]}


def schedule_of(org) -> ReportSchedule:
    return ReportSchedule.objects.filter(organization=org).first() or ReportSchedule(organization=org)


class DigestView(OrgView):
    serializer_class = DigestSerializer
    write_action = MANAGE

    def get_object(self):   # DRF's OPTIONS asks for it before describing PUT
        return schedule_of(self.org)

    @extend_schema(summary="The emailed PDF digest: frequency, recipients, recent deliveries")
    def get(self, request):
        return Response(DigestSerializer(digest_body(self.org, schedule_of(self.org))).data)

    @extend_schema(summary="Change the digest's frequency and recipients",
                   description="The same checks as the dashboard: at most 20 distinct addresses, and at least one "
                               "unless the frequency is off.",
                   request=DigestWriteSerializer, responses={200: DigestSerializer})
    def put(self, request):
        body = DigestWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        form = DigestForm({"frequency": body.validated_data["frequency"],
                           "recipients": "\n".join(body.validated_data["recipients"])}, instance=schedule_of(self.org))
        if not form.is_valid():
            raise serializers.ValidationError({name: list(errors) for name, errors in form.errors.items()})
        schedule = form.save()
        log(request, "org.settings_changed", org=self.org, target=self.org.name, fields=form.changed_data)
        return Response(DigestSerializer(digest_body(self.org, schedule)).data)


class DigestSent(serializers.Serializer):
    report_id = serializers.IntegerField()
    recipients = serializers.IntegerField()


class DigestSendNow(OrgView):
    serializer_class = DigestSent
    write_action = MANAGE

    @extend_schema(summary="Send a digest now",
                   description="Makes the portfolio PDF and emails it to the digest's recipients at once, whatever "
                               "the frequency; it does not replace the week's or month's. At most one every "
                               "`DIGEST_SEND_NOW_MINUTES` (10) per organization: 429 `digests_per_org` with "
                               "`Retry-After`. 409 `no_recipients` when there is nobody to send it to. `Location` is "
                               "the report; the deliveries appear in `GET /digests/`.",
                   request=None, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: DigestSent, (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request):
        schedule = schedule_of(self.org)
        if not schedule.recipients:
            raise Conflict("The digest has no recipients: add at least one first (PUT /api/v1/digests/).",
                           code="no_recipients")
        try:
            report = digests.send_now(schedule)
        except digests.SentTooRecently as limited:
            raise over_quota(limited.code, limited.message, limited.retry_after) from None
        log(request, "report.requested", org=self.org, target=f"digest {report.pk}")
        return accepted({"report_id": report.pk, "recipients": len(schedule.recipients)},
                        request.build_absolute_uri(reverse("api:report-detail", args=[report.pk])))


class NightlyRun(serializers.Serializer):
    due = serializers.IntegerField(help_text="Scheduled sites whose next audit (due within 24 hours) starts now, "
                                             "at the pool's pace; a site whose run for that night already "
                                             "started is left as it is.")


class NightlyRunNow(OrgView):
    serializer_class = NightlyRun
    write_action = MANAGE

    @extend_schema(summary="Run tonight's scheduled audits now",
                   description="Each scheduled site whose next audit is due in the next 24 hours is audited now, "
                               "as that night's run: its slot is then skipped, the hourly limit on manual audits "
                               "does not apply, a second call starts nothing new, and they start at the worker "
                               "pool's pace (as the window spreads them). Queued by a task; `Location` lists the "
                               "queued audits.",
                   request=None, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: NightlyRun, (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request):
        due = len(schedules.due_within_a_day(self.org))
        if due:
            enqueue(RUN_NEXT_NOW_TASK, self.org.pk)
        return accepted({"due": due}, request.build_absolute_uri(reverse("api:audit-list") + "?status=queued"))
