"""Mail bombing through invitations and verification emails (issue 14, item 3).

Each invitation mails an address the inviter chose; each "send it again" mails the address an
account typed. Attack loops below count the mails really sent (Django's locmem outbox). Limits
(settings, env-driven): invitations per organization, per inviter (all their organizations) and
per recipient inbox (all organizations; spellings that reach one inbox count as one); verification
mails per account, per client IP and per inbox. Refusals the caller may see are 429s that keep
what was typed; the per-recipient limit is silent (the answer is the same as a sent invitation),
because a refusal would tell one organization that another one invited that person."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.smtp import refusing_smtp, use_smtp
from tlsaudit.accounts.models import User
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Invitation, Membership, Organization

pytestmark = pytest.mark.django_db


def invite(client, org, email, role=roles.MEMBER, **extra):
    return client.post(reverse("orgs:invite", args=[org.slug]), {"email": email, "role": role}, **extra)


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def new_org(owner, name) -> Organization:
    org = Organization.objects.create(name=name)
    Membership.objects.create(organization=org, user=owner, role=roles.OWNER)
    return org


def flashed(client) -> list[str]:
    """The messages the next page shows (what the user reads after a redirect)."""
    return [str(m) for m in client.get(reverse("home"), follow=True).context["messages"]]


# --- invitations -------------------------------------------------------------------------------

def test_an_organization_sends_at_most_its_limit_of_invitations_to_arbitrary_addresses(login, org_a, alice, settings,
                                                                                       mailoutbox):
    """The review's loop: 30 invitations to 30 addresses from one organization."""
    client = login(alice)
    answers = [invite(client, org_a, f"target{n}@victims.example").status_code for n in range(30)]

    limit = settings.INVITATION_LIMIT_PER_ORG
    assert limit < 30
    assert answers == [302] * limit + [429] * (30 - limit)
    assert len(mailoutbox) == limit == Invitation.objects.count()


def test_a_refused_invitation_says_why_keeps_what_was_typed_and_sends_nothing(login, org_a, alice, settings,
                                                                             mailoutbox):
    settings.INVITATION_LIMIT_PER_ORG = 1
    client = login(alice)
    invite(client, org_a, "first@agency-a.test")

    refused = invite(client, org_a, "second@agency-a.test", role=roles.ADMIN)

    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= settings.INVITATION_LIMIT_WINDOW_MINUTES * 60
    html = refused.content.decode()
    assert "Rate limit: this organization already sent 1 invitations in the last 24 hours. Try again in" in html
    assert 'value="second@agency-a.test"' in html
    assert len(mailoutbox) == 1 and not Invitation.objects.filter(email="second@agency-a.test").exists()


def test_an_inviter_cannot_escape_the_limit_by_creating_organizations(alice, settings, mailoutbox):
    settings.INVITATION_LIMIT_PER_ORG, settings.INVITATION_LIMIT_PER_INVITER = 5, 8
    client = client_of(alice)
    answers = []
    for n in range(4):
        org = new_org(alice, f"Throwaway {n}")
        answers += [invite(client, org, f"t{n}-{i}@victims.example").status_code for i in range(5)]

    assert answers.count(302) == 8 and len(mailoutbox) == 8
    last = invite(client, new_org(alice, "Throwaway 9"), "again@victims.example")
    assert last.status_code == 429 and "you already sent 8 invitations" in last.content.decode()


# One inbox, eight spellings the invite form accepts: case, +tags, the Kelvin sign (K), an IDN domain.
VICTIM_SPELLINGS = ["kate@bücher.example", "Kate@BÜCHER.example", "kate+1@bücher.example", "kate+2@bücher.example",
                    "\u212aate@bücher.example", "kate@xn--bcher-kva.example", "kate+3@xn--bcher-kva.example",
                    "KATE+4@bücher.example"]


def test_one_inbox_gets_at_most_its_limit_of_invitations_from_all_organizations_and_spellings(
        alice, charlie, org_a, org_b, settings, mailoutbox):
    settings.INVITATION_LIMIT_PER_ORG = settings.INVITATION_LIMIT_PER_INVITER = 100
    clients = [(client_of(alice), org_a), (client_of(charlie), org_b)]
    answers = [invite(client, org, address) for address in VICTIM_SPELLINGS for client, org in clients]

    assert [a.status_code for a in answers] == [302] * len(answers)   # nobody is told
    assert len(mailoutbox) == settings.INVITATION_LIMIT_PER_RECIPIENT
    # The invitations exist all the same (one per distinct address and org), so a real invitee can still join.
    assert Invitation.objects.count() == 2 * len({a.lower() for a in VICTIM_SPELLINGS})


def test_a_held_back_invitation_reads_exactly_like_a_sent_one(alice, charlie, org_a, org_b, settings, mailoutbox):
    settings.INVITATION_LIMIT_PER_RECIPIENT = 1
    alice_client, charlie_client = client_of(alice), client_of(charlie)
    invite(alice_client, org_a, "dave@victims.example")            # A's invitation uses the inbox's share
    flashed(alice_client)

    held = invite(charlie_client, org_b, "Dave+b@victims.example")  # B's is held back: B must not learn of A
    held_page = charlie_client.get(reverse("orgs:settings", args=[org_b.slug]))
    sent = invite(charlie_client, org_b, "erin@victims.example")
    sent_page = charlie_client.get(reverse("orgs:settings", args=[org_b.slug]))

    assert len(mailoutbox) == 2 and [m.to for m in mailoutbox] == [["dave@victims.example"],
                                                                   ["erin@victims.example"]]
    assert (held.status_code, held.url) == (sent.status_code, sent.url)
    assert [str(m) for m in held_page.context["messages"]] == ["Invitation sent to dave+b@victims.example."]
    assert [str(m) for m in sent_page.context["messages"]] == ["Invitation sent to erin@victims.example."]
    # Both listed as pending, alike.
    assert "dave+b@victims.example as member" in sent_page.content.decode()


def test_inviting_the_same_address_again_resends_one_invitation_within_the_limits(login, org_a, alice, settings,
                                                                                  mailoutbox):
    client = login(alice)
    answers = [invite(client, org_a, "dave@victims.example", role=role).status_code
               for role in [roles.MEMBER] * 9 + [roles.ADMIN]]

    assert answers == [302] * 10
    assert len(mailoutbox) == settings.INVITATION_LIMIT_PER_RECIPIENT
    [invitation] = Invitation.objects.all()      # re-sent, not duplicated; the last role wins
    assert invitation.role == roles.ADMIN


def test_revoking_and_inviting_again_does_not_reset_the_count(login, org_a, alice, settings, mailoutbox):
    settings.INVITATION_LIMIT_PER_ORG = 2
    client = login(alice)
    for n in range(4):
        invite(client, org_a, f"loop{n}@victims.example")
        for invitation in Invitation.objects.all():
            client.post(reverse("orgs:revoke_invitation", args=[org_a.slug, invitation.pk]))
    assert len(mailoutbox) == 2


def test_an_unverified_inviter_cannot_invite(login, org_a, alice, mailoutbox):
    User.objects.filter(pk=alice.pk).update(email_verified=False)
    response = invite(login(alice), org_a, "dave@victims.example")
    assert response.status_code == 403
    assert "Verify your own email address before inviting anyone" in response.content.decode()
    assert mailoutbox == [] and not Invitation.objects.exists()


def test_a_mail_server_refusing_the_invitation_saves_nothing_and_says_so(login, org_a, alice, settings, caplog):
    with refusing_smtp() as (port, server):
        use_smtp(settings, port)
        response = invite(login(alice), org_a, "dave@victims.example")

    assert server.refused == ["dave@victims.example"]
    assert response.status_code == 502
    assert "The invitation email could not be sent" in response.content.decode()
    assert not Invitation.objects.exists()
    assert "invitation to dave@victims.example" in caplog.text and "SMTPRecipientsRefused" in caplog.text


# --- verification emails -----------------------------------------------------------------------

def resend(client, ip="203.0.113.70"):
    return client.post(reverse("resend_verification"), {"next": "/"}, REMOTE_ADDR=ip)


def test_one_account_gets_at_most_its_limit_of_verification_links(db, settings, mailoutbox):
    """The review's loop: 25 POSTs to /accounts/verify-resend/."""
    dana = User.objects.create_user("dana@victims.example", "tangerine submarine lighthouse")
    client = client_of(dana)
    answers = [resend(client, ip=f"203.0.113.{n}") for n in range(25)]   # from 25 addresses: per account counts

    assert {a.status_code for a in answers} == {302}
    assert len(mailoutbox) == settings.VERIFICATION_LIMIT_PER_USER < 25
    refusals = [m for m in flashed(client) if m.startswith("Rate limit")]
    assert len(refusals) == 25 - settings.VERIFICATION_LIMIT_PER_USER
    assert all(re.fullmatch(r"Rate limit: we already sent several verification links recently\. "
                            r"Try again in (\d+ minutes?|1 hour)\.", m) for m in refusals), refusals


def test_one_network_gets_at_most_its_limit_of_verification_links(db, settings, mailoutbox):
    settings.VERIFICATION_LIMIT_PER_IP = 4
    for n in range(6):
        resend(client_of(User.objects.create_user(f"user{n}@victims{n}.example")), ip="198.51.100.9")
    assert len(mailoutbox) == 4


def test_many_accounts_on_one_inbox_get_at_most_its_limit_of_links(client, db, settings, mailoutbox):
    """Sign-ups with victim+1@, victim+2@… (each a new account, from a new IP), then resends from each:
    the victim's inbox gets VERIFICATION_LIMIT_PER_ADDRESS links in all, sign-up mails included."""
    for n in range(8):
        visitor = Client()
        response = visitor.post(reverse("signup"), {"full_name": "Spam Bot", "email": f"victim+{n}@victims.example",
                                                    "password": "tangerine submarine lighthouse"},
                                REMOTE_ADDR=f"198.51.100.{n}")
        assert response.status_code == 302    # the account is created all the same
        resend(visitor, ip=f"198.51.100.{n}")

    assert User.objects.count() == 8
    assert len(mailoutbox) == settings.VERIFICATION_LIMIT_PER_ADDRESS


def test_a_mail_server_failure_on_resend_is_an_error_message_not_a_500(db, settings, caplog):
    dana = User.objects.create_user("dana@victims.example")
    client = client_of(dana)
    with refusing_smtp() as (port, _):
        use_smtp(settings, port)
        response = resend(client)
    assert response.status_code == 302
    assert flashed(client) == ["The verification email could not be sent (the mail server refused it or did not "
                               "answer). Use “Send it again” in a few minutes."]
    assert f"verification email to user {dana.pk} not sent: SMTPRecipientsRefused" in caplog.text


def test_a_cache_outage_lets_verification_mail_through_and_says_so(db, settings, caplog, mailoutbox):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}  # nothing listens on port 1
    dana = User.objects.create_user("dana@victims.example")
    assert resend(client_of(dana)).status_code == 302
    assert len(mailoutbox) == 1
    assert f"rate limit verify-user:{dana.pk} not checked: the cache is unavailable" in caplog.text

