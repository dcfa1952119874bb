"""Webhook URLs to private addresses: refused when an owner saves one, and again at every delivery
(a URL saved while its name was public may point inside by the time an alert fires)."""

from __future__ import annotations

import pytest

from tests import hostile
from tests.support.ssrf import TARGET_IDS, TRICKY_TARGETS
from tlsaudit.alerts import webhooks
from tlsaudit.alerts.forms import WebhookForm
from tlsaudit.alerts.models import Webhook

WEBHOOKS_ONLY_PUBLIC = "webhooks only go to public addresses."


def hook_url(text: str, port: int | None = None, path: str = "/hook") -> str:
    host = text.strip("[]")
    netloc = f"[{host}]" if ":" in host else host
    return f"https://{netloc}{f':{port}' if port else ''}{path}"


@pytest.mark.parametrize("text, words", TRICKY_TARGETS, ids=TARGET_IDS)
def test_the_url_check_refuses_every_tricky_target(production, tricky_dns, text, words):
    with pytest.raises(webhooks.UnsafeURL) as refused:
        webhooks.check_url(hook_url(text))

    message = str(refused.value)
    assert all(word in message for word in words) and message.endswith(WEBHOOKS_ONLY_PUBLIC), message


@pytest.mark.django_db
@pytest.mark.parametrize("text, words", TRICKY_TARGETS, ids=TARGET_IDS)
def test_the_webhook_form_saves_none_of_them(production, tricky_dns, org, text, words):
    form = WebhookForm(data={"url": hook_url(text)}, org=org)

    assert not form.is_valid()
    [error] = form.errors["url"]
    # Django's URL validator turns some spellings away first ("Enter a valid URL."); ours names the range.
    assert error == "Enter a valid URL." or all(word in error for word in words), error
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_a_saved_url_whose_name_now_points_inside_is_refused_at_delivery_without_retry(production, tricky_dns,
                                                                                   site_a):
    from tlsaudit.alerts import services
    from tlsaudit.domain.alerts import Event
    from workers.tasks.alerts import deliver_webhook

    with hostile.trap("127.0.0.2") as (port, trap):
        # Saved when the name was public (or by a form without the check): the row is all that is needed
        hook = Webhook.objects.create(organization=site_a.organization,
                                      url=f"http://loopback.hostile.test:{port}/hook", secret="whsec_x")
        services.record(site_a, [Event("grade_dropped", f"site:{site_a.pk}:grade_dropped:audit:9",
                                       "Grade dropped from A to B", {"from": "A", "to": "B"})])
        deliver_webhook.apply(args=[hook.deliveries.get().pk])

    [row] = hook.deliveries.all()   # refused URLs are not retried: retrying cannot help
    assert (row.status, row.response_code) == ("failed", None)
    assert row.error == ("loopback.hostile.test points to 127.0.0.2, a loopback address (this machine): "
                         "webhooks only go to public addresses.")
    assert trap.accepted == 0
