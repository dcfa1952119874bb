"""Browser probes in the API: real Chromium page loads over HTTP and HTTPS, cold and warm."""

from django.conf import settings
from rest_framework import serializers

from tlsaudit.api.base import FieldsMixin
from tlsaudit.api.links import object_url
from tlsaudit.api.optional_fields import OptionalInSchema
from tlsaudit.api.serializers.perf import ChartSerializer
from tlsaudit.probes.models import Probe
from tlsaudit.probes.presenters import ERROR_HELP, charts_for, increase_table, page_facts, page_table
from tlsaudit.probes.services import MIN_SECONDS, VARIANTS, increase_of, increase_pct_of, max_seconds

HEAVY_COLUMNS = ("result", "summary")


class ProbeSerializer(FieldsMixin, serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    site_url = serializers.SerializerMethodField()
    progress_percent = serializers.IntegerField(source="percent", read_only=True,
                                                help_text="0–100 by page loads done; 100 once ended.")

    class Meta:
        model = Probe
        fields = ["id", "url", "site", "site_url", "status", "progress_percent", "loads_done", "loads_total",
                  "current_step", "params", "host", "ip", "created_at", "started_at", "finished_at", "duration_s",
                  "error_code", "error_message"]
        read_only_fields = fields
        extra_kwargs = {"params": {"help_text": "{path, runs, seconds, variants}, normalised."}}

    def get_url(self, probe) -> str:
        return object_url("api:probe-detail", probe.pk)

    def get_site_url(self, probe) -> str:
        return object_url("api:site-detail", probe.site_id)


class TableSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    header = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.ListField())


class ProbeDetailSerializer(ProbeSerializer):
    error_help = serializers.SerializerMethodField(help_text="What the error usually means, and what to do.")
    summary = serializers.SerializerMethodField(
        help_text="Per variant_mode (https_cold, …) and metric: median, min, max, p25, p75 (ms, counts, bytes).")
    increase_pct = serializers.SerializerMethodField(help_text="HTTPS over HTTP, cold and warm, per metric (%), of "
                                                               "the medians: negative when HTTPS is faster.")
    increase = serializers.SerializerMethodField(
        help_text="The same comparison over the page loads with its 95 % interval, per mode and timing metric: "
                  "{pct, low_pct, high_pct, n, method, verdict} (Hodges-Lehmann with the Mann-Whitney interval; "
                  "verdict higher, lower, “no significant difference”, or “single run, no interval” below 4 loads "
                  "per side).")
    tables = serializers.SerializerMethodField(help_text="The dashboard's requests-and-bytes and increase tables.")
    charts = serializers.SerializerMethodField(help_text="The dashboard's charts, each with its table.")
    page = serializers.SerializerMethodField(help_text="The HTTPS page's TLS and protocol, where http:// "
                                                       "redirected to, mixed content.")

    class Meta(ProbeSerializer.Meta):
        fields = [*ProbeSerializer.Meta.fields, "error_help", "summary", "increase_pct", "increase", "tables", "charts",
                  "page"]
        read_only_fields = fields

    def done(self, probe) -> bool:
        return probe.status == Probe.Status.DONE and bool(probe.result)

    def get_error_help(self, probe) -> str:
        return ERROR_HELP.get(probe.error_code, "")

    def get_summary(self, probe) -> dict:
        return (probe.summary or {}).get("summary") or {}

    def get_increase_pct(self, probe) -> dict:
        return increase_pct_of(probe) if self.done(probe) else {}

    def get_increase(self, probe) -> dict:
        return increase_of(probe) if self.done(probe) else {}

    def get_tables(self, probe) -> list[dict]:
        return TableSerializer([page_table(probe), increase_table(probe)], many=True).data if self.done(probe) else []

    def get_charts(self, probe) -> list[dict]:
        return ChartSerializer(charts_for(probe), many=True).data if self.done(probe) else []

    def get_page(self, probe) -> dict | None:
        return page_facts((probe.result or {}).get("loads") or []) if self.done(probe) else None


class ProbeWithRawSerializer(OptionalInSchema, ProbeDetailSerializer):
    raw = serializers.JSONField(source="result", read_only=True, allow_null=True,
                                help_text="The browser engine's JSON: every load with its timings and requests.")
    schema_optional = ("raw",)   # with ?include=raw

    class Meta(ProbeDetailSerializer.Meta):
        fields = [*ProbeDetailSerializer.Meta.fields, "raw"]
        read_only_fields = fields


class ProbeRequestSerializer(serializers.Serializer):
    path = serializers.CharField(required=False, max_length=500, help_text="The page to load (default /).")
    seconds = serializers.IntegerField(
        required=False, min_value=MIN_SECONDS, max_value=max_seconds(),
        help_text=f"Time for the measured rounds, like ab -t (default {settings.PROBE_DEFAULT_SECONDS}); rounds (HTTPS "
                  "and HTTP, cold and warm) run while the next fits, at least 3 (an interval needs them).")
    runs = serializers.IntegerField(required=False, min_value=1, max_value=settings.PROBE_MAX_RUNS,
                                    help_text=f"At most this many rounds (default {settings.PROBE_MAX_RUNS}).")
    variants = serializers.ListField(child=serializers.ChoiceField(choices=list(VARIANTS)), required=False,
                                     min_length=1, help_text="https and/or http (default both).")

    def validate_path(self, value):
        if not value.startswith("/") or any(c.isspace() for c in value):
            raise serializers.ValidationError("The path must start with / and contain no spaces.")
        return value
