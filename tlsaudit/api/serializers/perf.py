"""Performance runs in the API: load tests and HTTP/HTTPS sweeps, handshake timing runs.

Bodies are flat (`{"kind": "load", "requests": 100, "concurrency": 4}`) and checked field by
field here, so each error names its field; `loadtests.services.queue_run` then checks them again
with the organization's caps, exactly as for the dashboard's forms.
"""

from rest_framework import serializers

from tlsaudit.api.base import FieldsMixin
from tlsaudit.api.links import object_url
from tlsaudit.loadtests.checks import DEFAULT_AGENTS_LEVELS, DEFAULT_LEVELS, DEFAULT_REPEATS, MAX_REPEATS
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.loadtests.plans import FITTING_SECONDS, MAX_RUN_SECONDS, MIN_RUN_SECONDS
from tlsaudit.loadtests.presenters import PERCENTAGES, charts_for, percentage
from tlsaudit.loadtests.summaries import summary_of

MAX_LEVELS = 20
MAX_SUITES = 20
LOAD_FIELDS = ("scheme", "requests", "concurrency", "keepalive", "path", "timeout_s", "repeats", "seconds")
SWEEP_FIELDS = ("levels", "requests", "modes", "path", "repeats", "seconds")
# Heavy JSON columns a list never reads.
HEAVY_COLUMNS = ("results", "summary", "progress")


class PerfRunSerializer(FieldsMixin, serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    site_url = serializers.SerializerMethodField()
    progress_percent = serializers.IntegerField(source="percent", read_only=True,
                                                help_text="0–100 by requests (or handshakes) done; 100 once ended.")

    class Meta:
        model = PerfRun
        fields = ["id", "url", "site", "site_url", "kind", "status", "progress_percent", "work_done", "work_total",
                  "params", "cancel_requested", "host", "ip", "created_at", "started_at", "finished_at",
                  "deadline_at", "error_code", "error_message"]
        read_only_fields = fields
        extra_kwargs = {"params": {"help_text": "The run's parameters, normalised (defaults filled in)."},
                        "work_done": {"help_text": "Requests (or handshakes) finished so far."}}

    def get_url(self, run) -> str:
        return object_url("api:loadtest-detail", run.pk)

    def get_site_url(self, run) -> str:
        return object_url("api:site-detail", run.site_id)


class StepSerializer(serializers.Serializer):
    label = serializers.CharField()
    status = serializers.CharField(help_text="pending, running or done.")


class ChartSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    type = serializers.CharField()
    x_title = serializers.CharField()
    y_title = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    datasets = serializers.ListField(child=serializers.DictField(),
                                     help_text="{label, data[, intervals]}: data are medians over the repeats (null "
                                               "when no request completed); intervals are their 95 % [low, high].")
    warnings = serializers.ListField(child=serializers.CharField(),
                                     help_text="Figures of this chart with nothing to compare (no request completed), "
                                               "and why.")
    table = serializers.DictField(help_text="The chart's exact numbers: {header: [...], rows: [[...], ...]}.")


class PerfRunDetailSerializer(PerfRunSerializer):
    steps = serializers.SerializerMethodField()
    results = serializers.SerializerMethodField(
        help_text="One entry per finished step. Load and sweep steps carry ab's report (`report`) and its "
                  "“served within” percentiles in ms (`percentiles_ms`, from the merged histograms); handshake "
                  "steps carry the cell (`cell`) and its timing statistics (`result`).")
    summary = serializers.SerializerMethodField(
        help_text="Medians over the repeats with 95 % intervals. Sweeps, per mode: per level both cells and the "
                  "signed TLS overhead (`time_taken_overhead`: the median of every request's time, (HTTPS - HTTP) / "
                  "HTTP, with `base_median` and `other_median` in µs, the medians it compares; "
                  "`requests_per_second_overhead`: end-to-end rates, (HTTP - HTTPS) / HTTP; both negative when HTTPS "
                  "is faster), each {pct, low_pct, high_pct, verdict, n}, and the average row. Load tests: the cell. "
                  "Handshakes: cells, TLS 1.3 vs 1.2 (`tls13_vs_tls12`, the median of every handshake, negative when "
                  "TLS 1.3 is faster) and resumed vs full. `verdict` is higher, lower, “no significant difference” "
                  "(the interval spans 0: the interval says how large a difference could be), “single run, no "
                  "interval” or “no data” (nothing completed; no figure).")
    charts = serializers.SerializerMethodField(help_text="The dashboard's charts, each with its table.")

    class Meta(PerfRunSerializer.Meta):
        fields = [*PerfRunSerializer.Meta.fields, "steps", "results", "summary", "charts"]
        read_only_fields = fields

    def get_steps(self, run) -> list[dict]:
        return StepSerializer((run.progress or {}).get("steps", []), many=True).data

    def get_results(self, run) -> list[dict]:
        return [present_entry(entry) for entry in run.results]

    def get_summary(self, run) -> dict:
        return summary_of(run)

    def get_charts(self, run) -> list[dict]:
        return ChartSerializer(charts_for(run), many=True).data


def present_entry(entry: dict) -> dict:
    if "report" in entry:
        report = entry["report"]
        return {"step": entry["step"], "label": entry["label"], "scheme": entry.get("scheme"),
                "level": entry.get("level"), "mode": entry.get("mode"), "repeat": entry.get("repeat", 0),
                "warmup": entry.get("warmup", False), "report": report,
                "percentiles_ms": {p: percentage(report, p) for p in PERCENTAGES}}
    # The encoded HdrHistograms stay on the row: their figures are already in the result.
    result = {k: v for k, v in (entry.get("result") or {}).items() if k != "histograms"}
    return {"step": entry["step"], "label": entry["label"], "cell": entry.get("cell"), "result": result}


def unused_fields(attrs: dict, initial: dict, allowed) -> dict:
    return {name: [f"Not used by this kind of run (use {', '.join(allowed)})."]
            for name in initial if name not in allowed and name != "kind"}


class LoadRunRequestSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["load", "sweep"], help_text="load: one ab-style run. sweep: HTTP vs "
                                   "HTTPS at each concurrency level.")
    scheme = serializers.ChoiceField(choices=["https", "http"], required=False, help_text="load only (default https).")
    requests = serializers.IntegerField(required=False, min_value=1,
                                        help_text="Requests per run (load, default 100) or per level (sweep, 500).")
    concurrency = serializers.IntegerField(required=False, min_value=1, help_text="load only (default 1).")
    keepalive = serializers.BooleanField(required=False, help_text="load only: reuse connections (ab -k).")
    timeout_s = serializers.FloatField(required=False, min_value=0.5, max_value=60, help_text="load only.")
    levels = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, min_length=1,
                                   max_length=MAX_LEVELS, help_text="sweep only: concurrency levels "
                                                                    f"(default {', '.join(map(str, DEFAULT_LEVELS))}).")
    modes = serializers.ListField(child=serializers.ChoiceField(choices=["new", "keepalive"]), required=False,
                                  min_length=1, help_text="sweep only: new connection per request and/or keep-alive.")
    path = serializers.CharField(required=False, max_length=500, help_text="The path requested (default /).")
    repeats = serializers.IntegerField(required=False, min_value=1, max_value=MAX_REPEATS,
                                       help_text=f"Runs per cell after a discarded warm-up (default {DEFAULT_REPEATS}): "
                                                 "the unit of the medians and 95 % intervals.")
    seconds = serializers.FloatField(required=False, min_value=MIN_RUN_SECONDS, max_value=MAX_RUN_SECONDS,
                                     help_text=f"How long each run lasts at most (ab -t); requests are only its cap. "
                                               f"Default: the longest of {', '.join(f'{s:g}' for s in FITTING_SECONDS)} "
                                               "s whose plan fits the organization's maximum duration; a plan that "
                                               "cannot fit is refused (cap_duration) before it starts.")

    def validate(self, attrs):
        allowed = LOAD_FIELDS if attrs["kind"] == "load" else SWEEP_FIELDS
        errors = unused_fields(attrs, self.initial_data, allowed)
        if attrs["kind"] == "load" and attrs.get("concurrency", 1) > attrs.get("requests", 100):
            errors["concurrency"] = ["Concurrency cannot exceed the number of requests (as with ab)."]
        if attrs["kind"] == "sweep" and attrs.get("levels") and max(attrs["levels"]) > attrs.get("requests", 500):
            errors["levels"] = ["Each level's concurrency cannot exceed the requests per level."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def validate_path(self, value):
        if not value.startswith("/") or any(c.isspace() for c in value):
            raise serializers.ValidationError("The path must start with / and contain no spaces.")
        return value


class HandshakeRunRequestSerializer(serializers.Serializer):
    versions = serializers.ListField(child=serializers.ChoiceField(choices=["1.2", "1.3"]), required=False,
                                     min_length=1, help_text="TLS versions to time (default both).")
    agents_levels = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, min_length=1,
                                          max_length=MAX_LEVELS, help_text="Concurrent agents per cell "
                                                                           f"(default {', '.join(map(str, DEFAULT_AGENTS_LEVELS))}).")
    per_agent = serializers.IntegerField(required=False, min_value=1, help_text="Handshakes per agent (default 20).")
    resume = serializers.BooleanField(required=False, help_text="Also time resumed handshakes.")
    suites = serializers.ListField(child=serializers.CharField(max_length=80), required=False,
                                   max_length=MAX_SUITES, help_text="IANA suite names to pin (default: the "
                                                                    "server's choice).")
    repeats = serializers.IntegerField(required=False, min_value=1, max_value=MAX_REPEATS,
                                       help_text=f"Rounds of every cell after a discarded warm-up (default "
                                                 f"{DEFAULT_REPEATS}).")
    seconds = serializers.FloatField(required=False, min_value=MIN_RUN_SECONDS, max_value=MAX_RUN_SECONDS,
                                     help_text=f"How long each run lasts at most (ab -t); requests are only its cap. "
                                               f"Default: the longest of {', '.join(f'{s:g}' for s in FITTING_SECONDS)} "
                                               "s whose plan fits the organization's maximum duration; a plan that "
                                               "cannot fit is refused (cap_duration) before it starts.")


def run_params(validated: dict) -> dict:
    """The raw params queue_run validates (and fills in), from the fields the caller sent."""
    return {name: value for name, value in validated.items() if name != "kind"}
