"""Webhooks in the API. `url` is where we POST alerts (as in the dashboard's form); the webhook's
own API address is `api_url`. The signing secret is in the creating response only."""

from rest_framework import serializers

from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.api import context
from tlsaudit.api.base import FieldsMixin
from tlsaudit.api.links import object_url
from tlsaudit.domain import roles


class WebhookSerializer(FieldsMixin, serializers.ModelSerializer):
    api_url = serializers.SerializerMethodField()
    deliveries_url = serializers.SerializerMethodField()
    secret_hint = serializers.CharField(read_only=True, help_text="The secret's prefix and last 4 characters.")

    class Meta:
        model = Webhook
        fields = ["id", "api_url", "url", "active", "secret_hint", "created_at", "deliveries_url"]
        read_only_fields = fields
        extra_kwargs = {"url": {"help_text": "Where alerts are POSTed, signed with the secret. A read-only key "
                                             "(or a viewer) sees its origin only, `https://hooks.example.com/…`: "
                                             "a webhook URL is often itself the credential."}}

    def get_api_url(self, hook) -> str:
        return object_url("api:webhook-detail", hook.pk)

    def to_representation(self, hook):
        data = super().to_representation(hook)
        request = self.context.get("request")
        org = context.resolve(request) if request is not None else None
        if "url" in data and not (org and roles.can(org.role, "see_alert_targets")):
            data["url"] = hook.origin_only
        return data

    def get_deliveries_url(self, hook) -> str:
        return object_url("api:webhook-deliveries", hook.pk)


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(read_only=True, help_text="Shown this once: verify each delivery's "
                                                             "X-TLSAudit-Signature (HMAC-SHA256 of the body) with it.")

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookWriteSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=500, help_text="An https:// URL on a public address.")
    active = serializers.BooleanField(required=False, help_text="Inactive webhooks get no alerts (default true).")


class DeliverySerializer(FieldsMixin, serializers.ModelSerializer):
    kind = serializers.CharField(read_only=True, help_text="test, or the alert's kind (grade_dropped, …).")

    class Meta:
        model = WebhookDelivery
        fields = ["id", "webhook", "event", "first", "attempt", "kind", "status", "response_code", "error",
                  "duration_ms", "created_at", "next_attempt_at"]
        read_only_fields = fields
        extra_kwargs = {"event": {"help_text": "The alert event's id; null for a test delivery."},
                        "first": {"help_text": "The first attempt's id, for retries."},
                        "next_attempt_at": {"help_text": "When this failed attempt is retried; null when it is not "
                                                         "(delivered, a 4xx, or its 12 retries over ~21 h spent)."}}
