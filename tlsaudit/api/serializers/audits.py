"""Audits in the API: compact by default (what a list or a poll needs), `?view=full` for the whole
report (read from the stored facts and report JSON, as the dashboard's report page reads them),
`?include=raw` for sslyze's JSON."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tlsaudit.api.base import FieldsMixin
from tlsaudit.api.links import object_url
from tlsaudit.api.optional_fields import OptionalInSchema
from tlsaudit.audits import jsonreport
from tlsaudit.audits.models import Audit, AuditSuite
from tlsaudit.audits.presenters import error_label
from tlsaudit.audits.services import progress_percent, suite_row
from tlsaudit.domain.scanfacts import OK, PROTOCOLS
from tlsaudit.domain.services import SERVICES

# Heavy JSON columns a list or a compact view never reads.
HEAVY_COLUMNS = ("raw", "facts", "report", "mozilla_raw")
# What ?view=full adds to the compact audit, and ?include=raw to either.
FULL_FIELDS = ("scores", "caps", "warnings", "trust_issues", "not_tested", "not_applicable", "improvements", "findings", "protocols",
               "suites", "certificates", "mozilla", "best_profile", "recommendations", "predicted_grade",
               "config_snippets", "client_simulation", "post_quantum")
RAW_FIELDS = ("raw", "mozilla_raw")


class AuditSerializer(OptionalInSchema, FieldsMixin, serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    site_url = serializers.SerializerMethodField()
    progress_percent = serializers.SerializerMethodField(help_text="0–100; 100 once done or failed.")
    error_label = serializers.SerializerMethodField(help_text="The error code in words, e.g. “Connection refused”.")
    # The site's choice set, so the schema has one ServiceEnum for both.
    service = serializers.ChoiceField(choices=list(SERVICES), read_only=True, help_text=(
        "The TLS service audited (https, smtp, imaps…): the site's when queued, kept if the site changes."))

    class Meta:
        model = Audit
        fields = ["id", "url", "site", "site_url", "status", "trigger", "progress_percent", "grade",
                  "grade_ignoring_trust", "score", "rules_version", "host", "port", "service", "ip", "created_at",
                  "started_at",
                  "finished_at", "duration_s", "timings", "error_code", "error_label", "error_message", "turn_note"]
        read_only_fields = fields
        extra_kwargs = {"site": {"help_text": "The site's id."},
                        "turn_note": {"help_text": "While queued behind audits of other sites on the same IP address "
                                                   "(one audit per address at a time): what it waits for, in words; "
                                                   "else empty."},
                        "grade_ignoring_trust": {"help_text": "The grade if the certificate were trusted (T → "
                                                              "what the configuration earns)."}}

    def get_url(self, audit) -> str:
        return object_url("api:audit-detail", audit.pk)

    def get_site_url(self, audit) -> str:
        return object_url("api:site-detail", audit.site_id)

    def get_progress_percent(self, audit) -> int:
        return progress_percent(audit)

    def get_error_label(self, audit) -> str:
        return error_label(audit.error_code) if audit.error_code else ""


class SuiteSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditSuite
        fields = ["protocol", "name", "openssl_name", "key_exchange", "bits", "kx_bits", "kx_curve", "forward_secret",
                  "aead", "strength", "preference"]


class CertificateSerializer(serializers.Serializer):
    subject = serializers.CharField()
    issuer = serializers.CharField()
    serial_hex = serializers.CharField()
    not_before = serializers.DateTimeField()
    not_after = serializers.DateTimeField()
    key_type = serializers.CharField()
    key_bits = serializers.IntegerField()
    curve = serializers.CharField(allow_null=True)
    signature_hash = serializers.CharField(allow_null=True)
    fingerprint_sha256 = serializers.CharField()
    san_dns = serializers.ListField(child=serializers.CharField())
    san_ip = serializers.ListField(child=serializers.CharField())
    is_ca = serializers.BooleanField()
    self_signed = serializers.BooleanField()


class TrustSerializer(serializers.Serializer):
    store = serializers.CharField(help_text="Mozilla, Apple, Android, Windows, Java or Custom CA.")
    trusted = serializers.BooleanField()
    error = serializers.CharField(allow_blank=True)


class CheckSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="ok, bad or not_tested.")
    detail = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True, help_text="Why it was not tested.")


class RevocationSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="good, revoked, unknown or not_tested.")
    method = serializers.CharField(allow_blank=True, help_text="'stapled OCSP', 'OCSP' (asked of the responder) or "
                                                                "'CRL'; empty when not checked.")
    source = serializers.CharField(allow_blank=True, help_text="The OCSP responder or CRL URL that answered.")
    why = serializers.CharField(allow_blank=True, help_text="Why it was not checked: no_url, no_issuer, unreachable, "
                                                            "blocked, timeout, bad_signature or bad_response.")
    reason = serializers.CharField(allow_blank=True)
    revocation_reason = serializers.CharField(allow_null=True, help_text="The CA's reason, when revoked.")
    revoked_at = serializers.DateTimeField(allow_null=True)
    summary = serializers.CharField(help_text="The status in words, as the report says it.")


class DeploymentSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    chain = CertificateSerializer(many=True, help_text="As sent by the server, leaf first.")
    trust = TrustSerializer(many=True)
    hostname_matches = serializers.BooleanField()
    chain_complete = serializers.BooleanField(allow_null=True)
    chain_in_order = serializers.BooleanField(allow_null=True,
                                              help_text="The leaf's issuers follow it in order (extra certificates aside).")
    chain_extra = serializers.ListField(child=serializers.CharField(), allow_null=True,
                                        help_text="Subjects of sent certificates not on the way to the root; "
                                                  "null: not examined (audits before rules 2009r+tlsaudit.7).")
    ocsp_stapled = CheckSerializer()
    revocation = RevocationSerializer(help_text="The leaf's OCSP or CRL status: a revoked leaf grades T.")
    must_staple = serializers.BooleanField()
    sct_count = serializers.IntegerField(allow_null=True)
    is_ev = serializers.BooleanField()


class ClientHandshakeSerializer(serializers.Serializer):
    client = serializers.CharField(help_text="Profile key, e.g. chromium.")
    label = serializers.CharField(help_text="The client and its version, e.g. Chromium 156 (Debian 12).")
    protocol = serializers.CharField(allow_null=True, help_text="Negotiated protocol; null when the handshake fails.")
    suite = serializers.CharField(allow_null=True)
    group = serializers.CharField(allow_null=True, help_text="Key-exchange group.")
    dh_bits = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_blank=True, help_text="Why the handshake fails, or why it was not tested.")
    tested = serializers.BooleanField()
    recorded = serializers.BooleanField(help_text="false: built from the client's published lists.")
    profile = serializers.CharField(help_text="'recorded here' or 'from published lists'.")
    modern = serializers.BooleanField(help_text="Counts for the 'with modern clients' grade rules.")


class ClientSimulationSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="ok or not_tested.")
    reason = serializers.CharField(allow_blank=True)
    clients = ClientHandshakeSerializer(many=True)


class PostQuantumSerializer(serializers.Serializer):
    ready = serializers.BooleanField(allow_null=True, help_text="Accepts a standard hybrid group; null: not probed.")
    status = serializers.CharField(help_text="ok, bad or not_tested.")
    detail = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)
    accepted = serializers.ListField(child=serializers.CharField())
    rejected = serializers.ListField(child=serializers.CharField())
    draft_kyber = serializers.BooleanField(allow_null=True, help_text="Accepts the obsolete X25519Kyber768Draft00.")
    browser_choice = serializers.CharField(allow_null=True, help_text="The group picked for a browser's offer.")
    prefers_pq = serializers.BooleanField(allow_null=True)


class ProtocolSerializer(serializers.Serializer):
    name = serializers.CharField()
    supported = serializers.BooleanField(allow_null=True, help_text="null when it could not be tested.")
    status = serializers.CharField(help_text="ok (supported), bad (not supported) or not_tested.")
    reason = serializers.CharField(allow_blank=True)


class AuditFullSerializer(AuditSerializer):
    scores = serializers.SerializerMethodField(help_text="Protocol, key exchange and cipher scores (0–100).")
    caps = serializers.SerializerMethodField(help_text="Rules that capped the grade: rule_id, grade, reason.")
    warnings = serializers.SerializerMethodField()
    trust_issues = serializers.SerializerMethodField()
    not_tested = serializers.SerializerMethodField(help_text="Rules that could not be checked, and why.")
    not_applicable = serializers.SerializerMethodField(help_text=(
        "Rules that mean nothing for the site's service, and why: HSTS and A+ for a service that is not HTTPS "
        "(an SMTP server sends no HTTP header). Neither passed nor untested."))
    improvements = serializers.SerializerMethodField()
    findings = serializers.SerializerMethodField()
    protocols = serializers.SerializerMethodField()
    suites = serializers.SerializerMethodField()
    certificates = serializers.SerializerMethodField()
    mozilla = serializers.SerializerMethodField(help_text="Verdict per Mozilla profile (modern, intermediate, old).")
    best_profile = serializers.CharField(read_only=True)
    recommendations = serializers.SerializerMethodField()
    predicted_grade = serializers.SerializerMethodField(help_text="The grade once every recommendation is applied.")
    config_snippets = serializers.SerializerMethodField(help_text="Server → configuration for the target profile.")
    client_simulation = serializers.SerializerMethodField(help_text="What each simulated client negotiates.")
    post_quantum = serializers.SerializerMethodField(help_text="Hybrid post-quantum key exchange.")

    schema_optional = FULL_FIELDS

    class Meta(AuditSerializer.Meta):
        fields = [*AuditSerializer.Meta.fields, *FULL_FIELDS]
        read_only_fields = fields

    def grading(self, audit) -> dict:
        return (audit.report or {}).get("grade") or {}

    def get_scores(self, audit) -> dict[str, int]:
        return self.grading(audit).get("scores") or {}

    def get_caps(self, audit) -> list[dict]:
        return self.grading(audit).get("caps") or []

    def get_warnings(self, audit) -> list[dict]:
        return self.grading(audit).get("warnings") or []

    def get_trust_issues(self, audit) -> list[dict]:
        return self.grading(audit).get("trust_issues") or []

    def get_not_tested(self, audit) -> list[dict]:
        return self.grading(audit).get("not_tested") or []

    def get_not_applicable(self, audit) -> list[dict]:
        return self.grading(audit).get("not_applicable") or []

    def get_improvements(self, audit) -> list[str]:
        return self.grading(audit).get("improvements") or []

    def get_findings(self, audit) -> list[dict]:
        return (audit.report or {}).get("findings") or []

    def facts(self, audit):
        """The stored facts, parsed once per audit: suites and certificates come from them, as on
        the dashboard's report page (so audits whose normalised rows were never written show too)."""
        if getattr(audit, "_parsed_facts", None) is None:
            audit._parsed_facts = audit.scan_facts() or False
        return audit._parsed_facts or None

    @extend_schema_field(ProtocolSerializer(many=True))
    def get_protocols(self, audit) -> list[dict]:
        facts = self.facts(audit)
        rows = []
        for name in reversed(PROTOCOLS):
            check = facts.protocols.get(name) if facts else None
            status = check.status if check else "not_tested"
            rows.append({"name": name, "supported": None if status == "not_tested" else status == OK,
                         "status": status, "reason": check.reason if check else "not run"})
        return ProtocolSerializer(rows, many=True).data

    def get_suites(self, audit) -> list[dict]:
        facts = self.facts(audit)
        rows = [suite_row(None, facts, suite) for suite in facts.suites] if facts else []
        newest_first = {name: index for index, name in enumerate(reversed(PROTOCOLS))}
        rows.sort(key=lambda s: (newest_first.get(s.protocol, 9), s.preference is None, s.preference or 0, s.name))
        return SuiteSerializer(rows, many=True).data

    @extend_schema_field(DeploymentSerializer(many=True))
    def get_certificates(self, audit) -> list[dict]:
        facts = self.facts(audit)
        rows = [{"index": index, "chain": deployment.chain, "trust": deployment.trust,
                 "hostname_matches": deployment.hostname_matches, "chain_complete": deployment.chain_complete,
                 "chain_in_order": deployment.chain_in_order, "chain_extra": deployment.chain_extra,
                 "ocsp_stapled": deployment.ocsp_stapled,
                 "revocation": revocation_row(deployment.revocation), "must_staple": deployment.must_staple, "sct_count": deployment.sct_count, "is_ev": deployment.is_ev}
                for index, deployment in enumerate(facts.certificates if facts else [])]
        return DeploymentSerializer(rows, many=True).data

    def get_mozilla(self, audit) -> dict:
        return (audit.report or {}).get("mozilla") or {}

    def get_recommendations(self, audit) -> list[dict]:
        return (audit.report or {}).get("recommendations") or []

    def get_predicted_grade(self, audit) -> dict | None:
        return (audit.report or {}).get("predicted")

    def get_config_snippets(self, audit) -> dict[str, str]:
        return (audit.report or {}).get("snippets") or {}

    @extend_schema_field(ClientSimulationSerializer)
    def get_client_simulation(self, audit) -> dict:
        facts = self.facts(audit)
        return ClientSimulationSerializer(jsonreport.client_simulation_json(facts.client_simulation if facts else None)
                                          ).data

    @extend_schema_field(PostQuantumSerializer)
    def get_post_quantum(self, audit) -> dict:
        facts = self.facts(audit)
        return PostQuantumSerializer(jsonreport.post_quantum_json(facts.post_quantum if facts else None)).data


def revocation_row(revocation) -> dict:
    """The report's JSON words, with the time as a datetime so that it is written like every other."""
    return {**jsonreport.revocation_json(revocation), "revoked_at": revocation.revoked_at if revocation else None}


def with_raw(serializer_class):
    """The same shape plus `raw` (sslyze's JSON) and `mozilla_raw` (sslyze's Mozilla checker)."""

    class WithRaw(serializer_class):
        raw = serializers.JSONField(read_only=True, allow_null=True, help_text="sslyze's JSON, rejected suites "
                                                                               "dropped.")
        mozilla_raw = serializers.JSONField(read_only=True, allow_null=True)
        schema_optional = (*serializer_class.schema_optional, *RAW_FIELDS)

        class Meta(serializer_class.Meta):
            fields = [*serializer_class.Meta.fields, *RAW_FIELDS]
            read_only_fields = fields

    WithRaw.__name__ = f"{serializer_class.__name__.removesuffix('Serializer')}WithRawSerializer"
    return WithRaw


AuditWithRawSerializer = with_raw(AuditSerializer)
AuditFullWithRawSerializer = with_raw(AuditFullSerializer)


class AuditTriggerSerializer(serializers.Serializer):
    """No body is needed: POST starts an audit of the site in the URL."""


class CertSummarySerializer(serializers.Serializer):
    subject = serializers.CharField()
    issuer = serializers.CharField()
    not_after = serializers.CharField()
    key = serializers.CharField()
    fingerprint_sha256 = serializers.CharField()
    serial_hex = serializers.CharField()


class FindingChangeSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    severity = serializers.CharField()
    old_status = serializers.CharField(allow_null=True)
    new_status = serializers.CharField(allow_null=True)


class GradeChangeSerializer(serializers.Serializer):
    old = serializers.CharField(allow_blank=True)
    new = serializers.CharField(allow_blank=True)
    old_score = serializers.IntegerField(allow_null=True)
    new_score = serializers.IntegerField(allow_null=True)
    direction = serializers.ChoiceField(choices=["up", "down", "same"])
    caps_added = serializers.ListField(child=serializers.DictField())
    caps_removed = serializers.ListField(child=serializers.DictField())


class SuiteRefSerializer(serializers.Serializer):
    protocol = serializers.CharField()
    name = serializers.CharField()


class CertificateChangeSerializer(serializers.Serializer):
    old = CertSummarySerializer(allow_null=True)
    new = CertSummarySerializer(allow_null=True)


class AuditRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    site = serializers.IntegerField()
    grade = serializers.CharField(allow_blank=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class AuditDiffSerializer(serializers.Serializer):
    old = AuditRefSerializer(help_text="The earlier of the two audits (by finish time).")
    new = AuditRefSerializer()
    changed = serializers.BooleanField()
    protocols_added = serializers.ListField(child=serializers.CharField())
    protocols_removed = serializers.ListField(child=serializers.CharField())
    suites_added = SuiteRefSerializer(many=True)
    suites_removed = SuiteRefSerializer(many=True)
    certificate = CertificateChangeSerializer(allow_null=True, help_text="Set when the leaf certificate changed.")
    findings_appeared = FindingChangeSerializer(many=True)
    findings_fixed = FindingChangeSerializer(many=True)
    grade = GradeChangeSerializer()
