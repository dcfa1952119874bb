"""Webhooks: list, add (the secret is returned once), read, change, delete, send a test, deliveries.

URLs are checked by the dashboard's WebhookForm (https only, public addresses only outside
development, at most 10 per organization), so both give the same errors."""

from django.db import transaction
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from tlsaudit.alerts import services
from tlsaudit.alerts.forms import WebhookForm
from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.alerts.views import webhook_target
from tlsaudit.api.base import CsvListMixin, OrgView
from tlsaudit.api.errors import Conflict
from tlsaudit.api.idempotency import idempotent
from tlsaudit.api.logging import log
from tlsaudit.api.serializers.webhooks import (
    DeliverySerializer,
    WebhookCreatedSerializer,
    WebhookSerializer,
    WebhookWriteSerializer,
)
from tlsaudit.api.views.common import (
    FIELDS_PARAM,
    IDEMPOTENCY_PARAM,
    NOT_QUEUED,
    PAGE_SIZE_PARAM,
    accepted,
    choice,
)

MANAGE = "manage_org"   # as the dashboard's alert settings


def validated_url(org, url: str, instance=None) -> WebhookForm:
    """The dashboard form's checks, with its messages under the API's field name."""
    form = WebhookForm({"url": url}, instance=instance, org=org)
    if not form.is_valid():
        if form.has_error("url", code="duplicate"):
            raise Conflict(" ".join(form.errors["url"]), code="duplicate_webhook")
        raise serializers.ValidationError({name: list(errors) for name, errors in form.errors.items()})
    return form


class WebhookList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = WebhookSerializer
    csv_name = "webhooks"
    write_action = MANAGE

    def get_queryset(self):
        return Webhook.objects.filter(organization=self.org)

    @extend_schema(summary="List the organization's webhooks", parameters=[PAGE_SIZE_PARAM, FIELDS_PARAM])
    def get(self, request):
        return self.list(request)

    @extend_schema(summary="Add a webhook",
                   description="Answers 201 with the webhook and its signing `secret`, which is never shown again.",
                   request=WebhookWriteSerializer, responses={201: WebhookCreatedSerializer})
    def post(self, request):
        body = WebhookWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        hook = validated_url(self.org, body.validated_data["url"]).save(commit=False)
        hook.organization, hook.active = self.org, body.validated_data.get("active", True)
        hook.save()
        log(request, "webhook.created", org=self.org, target=webhook_target(hook), webhook_id=hook.pk)
        data = WebhookCreatedSerializer(hook, context={"request": request, "all_fields": True}).data
        response = Response(data, status=status.HTTP_201_CREATED, headers={"Location": data["api_url"]})
        add_never_cache_headers(response)   # the one response with the secret stays out of caches
        return response


class WebhookDetail(OrgView):
    serializer_class = WebhookSerializer
    write_action = MANAGE

    def get_queryset(self):
        return Webhook.objects.filter(organization=self.org)

    @extend_schema(summary="A webhook (without its secret)", parameters=[FIELDS_PARAM])
    def get(self, request, pk):
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(summary="Change a webhook's URL or turn it on or off",
                   request=WebhookWriteSerializer(partial=True), responses={200: WebhookSerializer})
    def patch(self, request, pk):
        hook = self.get_object()
        body = WebhookWriteSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        if "url" in body.validated_data:
            hook = validated_url(self.org, body.validated_data["url"], instance=hook).save(commit=False)
        if "active" in body.validated_data:
            hook.active = body.validated_data["active"]
        hook.save()
        return Response(WebhookSerializer(hook, context={"request": request, "all_fields": True}).data)

    @extend_schema(summary="Delete a webhook", responses={204: None})
    def delete(self, request, pk):
        hook = self.get_object()
        target = webhook_target(hook)
        hook.delete()
        log(request, "webhook.deleted", org=self.org, target=target, webhook_id=pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookTest(OrgView):
    serializer_class = DeliverySerializer
    write_action = MANAGE

    @extend_schema(summary="Send a test delivery",
                   description="Queues a signed `{\"kind\": \"test\"}` POST to the webhook; answers 202 with the "
                               "delivery, whose status and response code appear in the deliveries list.",
                   request=None, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: OpenApiResponse(DeliverySerializer, description="The queued delivery."),
                              (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request, pk):
        hook = get_object_or_404(Webhook.objects.filter(organization=self.org), pk=pk)
        with transaction.atomic():
            delivery = services.queue_delivery(hook, event=None)
        return accepted(DeliverySerializer(delivery).data, deliveries_url(hook))


def deliveries_url(hook) -> str:
    return reverse("api:webhook-deliveries", args=[hook.pk])


class WebhookDeliveries(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = DeliverySerializer
    csv_name = "deliveries"

    def get_queryset(self):
        hook = get_object_or_404(Webhook.objects.filter(organization=self.org), pk=self.kwargs["pk"])
        deliveries = WebhookDelivery.objects.filter(webhook=hook).select_related("event")
        state = choice(self.request.query_params, "status", WebhookDelivery.Status.values)
        return deliveries.filter(status=state) if state else deliveries

    @extend_schema(summary="A webhook's delivery attempts, newest first",
                   parameters=[OpenApiParameter("status", str, enum=list(WebhookDelivery.Status.values)),
                               PAGE_SIZE_PARAM, FIELDS_PARAM])
    def get(self, request, pk):
        return self.list(request)


class WebhookRedeliver(OrgView):
    serializer_class = DeliverySerializer
    write_action = MANAGE

    @extend_schema(summary="Redeliver a failed webhook delivery",
                   description="One more attempt of a delivery whose retries are all spent and failed, as the "
                               "dashboard's Redeliver. 409 `not_redeliverable` while it is still being tried, when "
                               "it arrived, or when the webhook is switched off.",
                   request=None, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: OpenApiResponse(DeliverySerializer, description="The new attempt."),
                              (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request, pk, delivery_pk):
        delivery = get_object_or_404(WebhookDelivery.objects.select_related("webhook", "first"),
                                     webhook__organization=self.org, webhook_id=pk, pk=delivery_pk)
        try:
            row = services.redeliver(delivery)
        except services.RedeliveryRefused as refusal:
            raise Conflict(str(refusal), code="not_redeliverable") from None
        return accepted(DeliverySerializer(row).data,
                        deliveries_url(delivery.webhook))
