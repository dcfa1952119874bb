"""Organizations: create, settings, invitations, roles, leaving, switching, and tenant isolation.

Personas from conftest: alice owns agency A, bob is a viewer in A, charlie owns agency B.
Charlie must never learn anything about A: its URLs answer him 404, exactly like a missing org.
"""

import datetime
import html
import re
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.urls import reverse
from django.utils import timezone

from tests.support.personas import PASSWORD
from tlsaudit.accounts.models import User
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Invitation, Membership, Organization


def private_ca_pem(name="Agency A internal root") -> str:
    """A self-signed CA certificate, as an agency's internal PKI would hand out."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def link_path(text: str) -> str:
    return urlsplit(re.search(r"https?://\S+", text).group(0)).path


def membership(org, user):
    return Membership.objects.get(organization=org, user=user)


def settings_url(org):
    return reverse("orgs:settings", args=[org.slug])


def invite_url(org):
    return reverse("orgs:invite", args=[org.slug])


def role_url(org, m):
    return reverse("orgs:change_role", args=[org.slug, m.pk])


def remove_url(org, m):
    return reverse("orgs:remove_member", args=[org.slug, m.pk])


def invite(org, email, role=roles.MEMBER, by=None):
    return Invitation.objects.create(organization=org, email=email, role=role, invited_by=by)


@pytest.fixture
def dave(db):
    """Someone alice invites: has an account, has not verified his address yet."""
    return User.objects.create_user("dave@agency-a.test", PASSWORD)


# --- Creating an organization ---------------------------------------------------------------------

@pytest.mark.parametrize("name, error", [
    ("", "This field is required."),
    ("   ", "This field is required."),
    (" X ", "Use at least 2 characters for the organization's name."),
    ("A" * 121, "Ensure this value has at most 120 characters (it has 121)."),
])
def test_it_shows_the_name_error_when_creating_an_organization(login, charlie, name, error):
    response = login(charlie).post(reverse("orgs:create"), {"name": name})

    assert response.status_code == 200
    assert error in response.context["form"].errors["name"]
    assert 'data-testid="error-name"' in response.content.decode()
    assert not Organization.objects.exists()


def test_it_makes_the_creator_owner_and_opens_the_site_list(login, charlie):
    response = login(charlie).post(reverse("orgs:create"), {"name": "  Agency B  "})

    org = Organization.objects.get()
    assert org.name == "Agency B" and org.slug == "agency-b"
    assert response.url == reverse("sites:list", args=[org.slug])
    assert membership(org, charlie).role == roles.OWNER
    charlie.refresh_from_db()
    assert charlie.last_org == org


def test_it_gives_two_organizations_with_the_same_name_different_slugs(login, org_b, charlie):
    login(charlie).post(reverse("orgs:create"), {"name": "Agency B"})
    assert sorted(Organization.objects.values_list("slug", flat=True)) == ["agency-b", "agency-b-2"]


def test_it_asks_an_anonymous_visitor_to_log_in_before_creating(client, db):
    response = client.post(reverse("orgs:create"), {"name": "Agency Z"})
    assert response.url.startswith(reverse("login")) and not Organization.objects.exists()


# --- Settings page --------------------------------------------------------------------------------

def test_it_shows_alice_her_members_and_nothing_of_other_agencies(login, org_a, org_b, alice):
    page = login(alice).get(settings_url(org_a)).content.decode()

    assert "alice@agency-a.test" in page and "bob@agency-a.test" in page
    assert "Agency B" not in page and "charlie@agency-b.test" not in page
    assert "Invite someone" in page and "Save settings" in page


def test_it_shows_bob_the_settings_but_not_the_controls(login, org_a, bob):
    response = login(bob).get(settings_url(org_a))

    page = response.content.decode()
    assert response.status_code == 200 and "alice@agency-a.test" in page
    assert "Only owners and admins can change the settings. Your role: viewer." in page
    assert "Invite someone" not in page and "Save settings" not in page


def test_it_refuses_bob_changing_the_settings_with_403(login, org_a, bob):
    response = login(bob).post(settings_url(org_a), {"name": "Bob's agency", "custom_ca_pem": ""})

    assert response.status_code == 403
    org_a.refresh_from_db()
    assert org_a.name == "Agency A"


def test_it_lets_alice_rename_her_organization(login, org_a, alice):
    response = login(alice).post(settings_url(org_a), {"name": "Agency A+", "custom_ca_pem": ""}, follow=True)

    assert "Settings saved." in response.content.decode()
    org_a.refresh_from_db()
    assert org_a.name == "Agency A+" and org_a.slug == "agency-a"


def test_it_applies_the_name_rule_when_renaming(login, org_a, alice):
    response = login(alice).post(settings_url(org_a), {"name": "X", "custom_ca_pem": ""})

    assert "Use at least 2 characters for the organization's name." in response.context["settings_form"].errors["name"]
    org_a.refresh_from_db()
    assert org_a.name == "Agency A"


@pytest.mark.parametrize("text", [
    "my CA is the one from the intranet",
    "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----",
])
def test_it_rejects_a_custom_ca_that_is_not_pem(login, org_a, alice, text):
    response = login(alice).post(settings_url(org_a), {"name": "Agency A", "custom_ca_pem": text})

    assert response.status_code == 200
    assert response.context["settings_form"].errors["custom_ca_pem"] == [
        "This is not a PEM certificate: paste one or more -----BEGIN CERTIFICATE----- blocks."]
    assert 'data-testid="error-custom_ca_pem"' in response.content.decode()
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem == ""


def test_it_stores_real_pem_ca_certificates(login, org_a, alice):
    root, other_root = private_ca_pem(), private_ca_pem("Agency A second root")
    pasted = f"\n  {root}\nsome notes between blocks\n{other_root}  \n"

    response = login(alice).post(settings_url(org_a), {"name": "Agency A", "custom_ca_pem": pasted})

    assert response.status_code == 302
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem == root + "\n" + other_root
    names = [c.subject.rfc4514_string() for c in x509.load_pem_x509_certificates(org_a.custom_ca_pem.encode())]
    assert names == ["CN=Agency A internal root", "CN=Agency A second root"]


def test_it_clears_the_custom_ca(login, org_a, alice):
    org_a.custom_ca_pem = private_ca_pem()
    org_a.save()
    login(alice).post(settings_url(org_a), {"name": "Agency A", "custom_ca_pem": "  \n "})
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem == ""


# --- Inviting -------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, field, error", [
    ({"email": "", "role": "member"}, "email", "This field is required."),
    ({"email": "dave-at-agency-a", "role": "member"}, "email", "Enter a valid email address."),
    ({"email": "BOB@agency-a.test", "role": "member"}, "email", "bob@agency-a.test is already a member of Agency A."),
    ({"email": "dave@agency-a.test", "role": "emperor"}, "role",
     "Select a valid choice. emperor is not one of the available choices."),
])
def test_it_shows_each_invite_field_error(login, org_a, alice, mailoutbox, data, field, error):
    response = login(alice).post(invite_url(org_a), data)

    assert response.status_code == 400
    assert response.context["invite_form"].errors[field] == [error]
    assert 'data-testid="error-' + field + '"' in response.content.decode()
    assert not Invitation.objects.exists() and mailoutbox == []


def test_it_refuses_an_admin_inviting_an_owner(login, org_a, bob, mailoutbox):
    Membership.objects.filter(user=bob).update(role=roles.ADMIN)

    response = login(bob).post(invite_url(org_a), {"email": "dave@agency-a.test", "role": "owner"})

    assert response.status_code == 400
    assert response.context["invite_form"].errors["role"] == ["As admin you cannot invite someone as owner."]
    assert not Invitation.objects.exists() and mailoutbox == []


def test_it_lets_an_admin_invite_a_member(login, org_a, bob, mailoutbox):
    Membership.objects.filter(user=bob).update(role=roles.ADMIN)
    login(bob).post(invite_url(org_a), {"email": "dave@agency-a.test", "role": "member"})
    assert Invitation.objects.get().role == roles.MEMBER and len(mailoutbox) == 1


def test_it_emails_an_invitation_with_a_working_link(login, org_a, alice, mailoutbox):
    response = login(alice).post(invite_url(org_a), {"email": " Dave@Agency-A.test ", "role": "admin"},
                                 follow=True)

    invitation = Invitation.objects.get()
    assert (invitation.email, invitation.role, invitation.invited_by) == ("dave@agency-a.test", "admin", alice)
    page = response.content.decode()
    assert "Invitation sent to dave@agency-a.test." in page
    assert "Pending invitations" in page and "dave@agency-a.test as admin" in page

    [email] = mailoutbox
    assert email.to == ["dave@agency-a.test"]
    # No inviter-chosen text in the subject; the body says who invited, with the inviter's (verified) address.
    assert email.subject == "Invitation to join an organization on TLS Audit"
    assert 'Alice Owner (alice@agency-a.test) invited you to join the organization "Agency A"' in email.body
    link = link_path(email.body)
    assert link == reverse("orgs:accept", args=[invitation.token])
    [(html, mimetype)] = email.alternatives
    assert mimetype == "text/html" and link in html
    assert "as admin" in email.body


def test_it_accepts_invitations_only_by_post(login, org_a, alice):
    assert login(alice).get(invite_url(org_a)).status_code == 405


# --- Accepting ------------------------------------------------------------------------------------

def test_it_offers_an_anonymous_visitor_to_sign_up_or_log_in(client, org_a):
    invitation = invite(org_a, "dave@agency-a.test", roles.MEMBER)
    accept = reverse("orgs:accept", args=[invitation.token])

    page = client.get(accept).content.decode()

    assert "Join Agency A" in page and "You are invited as <b>member</b> (dave@agency-a.test)." in page
    assert f'href="{reverse("signup")}?email=dave%40agency-a.test&amp;next={accept}"' in page
    assert f'href="{reverse("login")}?next={accept}"' in page
    assert "accept-invitation" not in page
    assert client.post(accept).status_code == 200 and not Membership.objects.filter(user__email="dave@agency-a.test")


def test_it_lets_a_newcomer_sign_up_from_the_invitation_and_join(client, org_a, mailoutbox):
    invitation = invite(org_a, "erin@agency-a.test", roles.MEMBER)
    accept = reverse("orgs:accept", args=[invitation.token])

    signed_up = client.post(f"{reverse('signup')}?next={accept}",
                            {"email": "erin@agency-a.test", "password": "tangerine submarine lighthouse"})
    assert signed_up.url == accept
    joined = client.post(accept)

    erin = User.objects.get(email="erin@agency-a.test")
    assert joined.url == reverse("sites:list", args=[org_a.slug])
    assert membership(org_a, erin).role == roles.MEMBER and erin.email_verified


def test_the_invitations_sign_up_link_fills_in_the_invited_address(client, org_a):
    invitation = invite(org_a, "erin+ops@agency-a.test", roles.MEMBER)
    page = client.get(reverse("orgs:accept", args=[invitation.token])).content.decode()
    [link] = re.findall(r'href="(/accounts/signup/\?email=[^"]*)"', page)

    form = client.get(html.unescape(link)).content.decode()

    assert 'name="email" value="erin+ops@agency-a.test"' in form


def test_it_refuses_the_wrong_logged_in_user_with_403_and_says_why(login, org_a, org_b, charlie):
    invitation = invite(org_a, "dave@agency-a.test", roles.ADMIN)
    client = login(charlie)

    for response in (client.get(reverse("orgs:accept", args=[invitation.token])),
                     client.post(reverse("orgs:accept", args=[invitation.token]))):
        assert response.status_code == 403
        assert ("This invitation is for dave@agency-a.test, but you are logged in as charlie@agency-b.test."
                in response.content.decode())
    assert not Membership.objects.filter(organization=org_a, user=charlie).exists()
    invitation.refresh_from_db()
    assert invitation.accepted_at is None


def test_it_lets_the_invited_user_join_with_the_invited_role(login, org_a, alice, dave):
    invitation = invite(org_a, "Dave@Agency-A.test", roles.ADMIN, by=alice)
    client = login(dave)
    accept = reverse("orgs:accept", args=[invitation.token])

    assert "accept-invitation" in client.get(accept).content.decode()
    response = client.post(accept, follow=True)

    assert response.redirect_chain[0] == (reverse("sites:list", args=[org_a.slug]), 302)
    assert "You joined Agency A." in response.content.decode()
    assert membership(org_a, dave).role == roles.ADMIN
    dave.refresh_from_db()
    assert dave.email_verified is True and dave.last_org == org_a
    invitation.refresh_from_db()
    assert invitation.accepted_by == dave and invitation.accepted_at is not None


def test_it_refuses_a_used_invitation_with_400(login, org_a, dave):
    invitation = invite(org_a, dave.email, roles.MEMBER)
    client = login(dave)
    client.post(reverse("orgs:accept", args=[invitation.token]))

    response = client.post(reverse("orgs:accept", args=[invitation.token]))

    assert response.status_code == 400
    assert "It was already accepted." in response.content.decode()
    assert Membership.objects.filter(organization=org_a, user=dave).count() == 1


def test_it_refuses_an_expired_invitation_with_400(client, login, org_a, dave):
    invitation = invite(org_a, dave.email, roles.MEMBER)
    Invitation.objects.filter(pk=invitation.pk).update(created_at=timezone.now() - datetime.timedelta(days=14))

    assert client.get(reverse("orgs:accept", args=[invitation.token])).status_code == 400
    response = login(dave).post(reverse("orgs:accept", args=[invitation.token]))

    assert response.status_code == 400
    assert "It has expired: invitations last 14 days." in response.content.decode()
    assert not Membership.objects.filter(organization=org_a, user=dave).exists()


def test_it_answers_404_for_an_unknown_invitation_token(client, db):
    assert client.get(reverse("orgs:accept", args=["no-such-token"])).status_code == 404


def test_it_lets_alice_revoke_a_pending_invitation(login, org_a, alice, dave):
    invitation = invite(org_a, dave.email)

    response = login(alice).post(reverse("orgs:revoke_invitation", args=[org_a.slug, invitation.pk]), follow=True)

    assert "Invitation revoked." in response.content.decode()
    assert not Invitation.objects.exists()
    assert login(dave).get(reverse("orgs:accept", args=[invitation.token])).status_code == 404


def test_it_cannot_revoke_an_accepted_invitation(login, org_a, alice, dave):
    invitation = invite(org_a, dave.email)
    login(dave).post(reverse("orgs:accept", args=[invitation.token]))

    response = login(alice).post(reverse("orgs:revoke_invitation", args=[org_a.slug, invitation.pk]))

    assert response.status_code == 404 and Invitation.objects.filter(pk=invitation.pk).exists()


# --- Changing roles -------------------------------------------------------------------------------

def test_it_lets_alice_promote_bob(login, org_a, alice, bob):
    response = login(alice).post(role_url(org_a, membership(org_a, bob)), {"role": "admin"}, follow=True)

    assert "bob@agency-a.test is now admin." in response.content.decode()
    assert membership(org_a, bob).role == roles.ADMIN


@pytest.mark.parametrize("value", ["", "emperor", "Owner"])
def test_it_explains_a_bad_role_value(login, org_a, alice, bob, value):
    response = login(alice).post(role_url(org_a, membership(org_a, bob)), {"role": value}, follow=True)

    assert "Choose one of owner, admin, member or viewer." in response.content.decode()
    assert membership(org_a, bob).role == roles.VIEWER


@pytest.mark.parametrize("new_role", [roles.OWNER, roles.ADMIN])
def test_it_refuses_an_admin_promoting_someone_above_member_with_403(login, org_a, bob, dave, new_role):
    Membership.objects.filter(user=bob).update(role=roles.ADMIN)
    daves = Membership.objects.create(organization=org_a, user=dave, role=roles.MEMBER)

    response = login(bob).post(role_url(org_a, daves), {"role": new_role})

    assert response.status_code == 403
    assert membership(org_a, dave).role == roles.MEMBER


def test_it_refuses_an_admin_demoting_the_owner_with_403(login, org_a, alice, bob):
    Membership.objects.filter(user=bob).update(role=roles.ADMIN)
    response = login(bob).post(role_url(org_a, membership(org_a, alice)), {"role": "viewer"})
    assert response.status_code == 403 and membership(org_a, alice).role == roles.OWNER


def test_it_keeps_the_last_owner_from_demoting_herself(login, org_a, alice):
    response = login(alice).post(role_url(org_a, membership(org_a, alice)), {"role": "admin"}, follow=True)

    assert "An organization needs at least one owner: make someone else owner first." in response.content.decode()
    assert membership(org_a, alice).role == roles.OWNER


def test_it_lets_an_owner_step_down_once_there_is_another_owner(login, org_a, alice, bob):
    Membership.objects.filter(user=bob).update(role=roles.OWNER)
    login(alice).post(role_url(org_a, membership(org_a, alice)), {"role": "member"})
    assert membership(org_a, alice).role == roles.MEMBER


# --- Removing and leaving -------------------------------------------------------------------------

def test_it_lets_alice_remove_bob(login, org_a, alice, bob):
    response = login(alice).post(remove_url(org_a, membership(org_a, bob)), follow=True)

    assert "bob@agency-a.test was removed." in response.content.decode()
    assert not Membership.objects.filter(organization=org_a, user=bob).exists()
    assert login(bob).get(settings_url(org_a)).status_code == 404


def test_it_refuses_an_admin_removing_the_owner_with_403(login, org_a, alice, bob):
    Membership.objects.filter(user=bob).update(role=roles.ADMIN)
    assert login(bob).post(remove_url(org_a, membership(org_a, alice))).status_code == 403
    assert Membership.objects.filter(organization=org_a, user=alice).exists()


def test_it_lets_bob_leave(login, org_a, bob):
    response = login(bob).post(remove_url(org_a, membership(org_a, bob)), follow=True)

    assert response.redirect_chain[0] == (reverse("home"), 302)
    assert "You left Agency A." in response.content.decode()
    assert not Membership.objects.filter(organization=org_a, user=bob).exists()


def test_it_keeps_the_last_owner_from_leaving(login, org_a, alice):
    response = login(alice).post(remove_url(org_a, membership(org_a, alice)), follow=True)

    assert "The last owner cannot leave: make someone else owner first." in response.content.decode()
    assert membership(org_a, alice).role == roles.OWNER


def test_it_removes_and_changes_roles_by_post_only(login, org_a, alice, bob):
    client = login(alice)
    assert client.get(remove_url(org_a, membership(org_a, bob))).status_code == 405
    assert client.get(role_url(org_a, membership(org_a, bob))).status_code == 405


# --- Switching organizations ----------------------------------------------------------------------

def test_it_opens_the_dashboard_on_the_last_organization_alice_used(login, org_a, alice):
    client = login(alice)
    client.post(reverse("orgs:create"), {"name": "Agency C"})
    org_c = Organization.objects.get(slug="agency-c")
    assert client.get("/").url == reverse("sites:list", args=[org_c.slug])

    switcher = client.get(reverse("sites:list", args=[org_a.slug])).content.decode()

    alice.refresh_from_db()
    assert alice.last_org == org_a
    assert client.get("/").url == reverse("sites:list", args=[org_a.slug])
    assert "Agency A" in switcher and "Agency C" in switcher


def test_it_lists_only_charlies_own_organizations_in_the_switcher(login, org_a, org_b, charlie):
    page = login(charlie).get(reverse("sites:list", args=[org_b.slug])).content.decode()
    assert "Agency B" in page and "Agency A" not in page


def test_it_falls_back_to_another_organization_after_leaving_the_last_one(login, org_a, org_b, bob):
    Membership.objects.create(organization=org_b, user=bob, role=roles.VIEWER)
    client = login(bob)
    client.get(settings_url(org_a))
    client.post(remove_url(org_a, membership(org_a, bob)))
    assert client.get("/").url == reverse("sites:list", args=[org_b.slug])


# --- Isolation: charlie (agency B) and bob (viewer in A) ------------------------------------------

def agency_a_urls(org_a, alice, bob):
    invitation = invite(org_a, "dave@agency-a.test", by=alice)
    return [
        ("get", settings_url(org_a)),
        ("post", settings_url(org_a)),
        ("post", invite_url(org_a)),
        ("post", reverse("orgs:revoke_invitation", args=[org_a.slug, invitation.pk])),
        ("post", role_url(org_a, membership(org_a, bob))),
        ("post", role_url(org_a, membership(org_a, alice))),
        ("post", remove_url(org_a, membership(org_a, bob))),
        ("post", remove_url(org_a, membership(org_a, alice))),
        ("get", reverse("sites:list", args=[org_a.slug])),
    ]


def test_it_answers_charlie_404_on_every_url_of_agency_a(login, org_a, org_b, alice, bob, charlie, mailoutbox):
    client = login(charlie)
    data = {"name": "Pwned", "custom_ca_pem": "", "email": "charlie@agency-b.test", "role": "owner"}

    for method, url in agency_a_urls(org_a, alice, bob):
        response = getattr(client, method)(url, data)
        assert response.status_code == 404, f"{method.upper()} {url} answered {response.status_code}"

    org_a.refresh_from_db()
    assert org_a.name == "Agency A" and Invitation.objects.count() == 1 and mailoutbox == []
    assert sorted(org_a.memberships.values_list("user__email", "role")) == [
        ("alice@agency-a.test", "owner"), ("bob@agency-a.test", "viewer")]
    charlie.refresh_from_db()
    assert charlie.last_org != org_a


def test_it_answers_charlie_the_same_404_as_for_a_missing_organization(login, org_a, org_b, charlie):
    client = login(charlie)
    theirs = client.get(settings_url(org_a))
    missing = client.get(reverse("orgs:settings", args=["no-such-agency"]))
    assert theirs.status_code == missing.status_code == 404
    assert without_csrf(theirs) == without_csrf(missing)


def without_csrf(response) -> str:
    # The CSRF token is masked afresh on every response; everything else must be identical.
    page = re.sub(r'"X-CSRFToken": "[^"]+"', "", response.content.decode())
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)


def test_it_answers_charlie_404_for_a_member_id_of_agency_a_under_his_own_org(login, org_a, org_b, bob, charlie):
    bobs = membership(org_a, bob)
    client = login(charlie)
    assert client.post(role_url(org_b, bobs), {"role": "owner"}).status_code == 404
    assert client.post(remove_url(org_b, bobs)).status_code == 404
    assert membership(org_a, bob).role == roles.VIEWER


def test_it_answers_bob_403_on_managing_others(login, org_a, alice, bob, mailoutbox):
    invitation = invite(org_a, "dave@agency-a.test", by=alice)
    alices = membership(org_a, alice)
    client = login(bob)

    assert client.post(invite_url(org_a), {"email": "eve@agency-e.test", "role": "viewer"}).status_code == 403
    assert client.post(reverse("orgs:revoke_invitation", args=[org_a.slug, invitation.pk])).status_code == 403
    assert client.post(role_url(org_a, alices), {"role": "viewer"}).status_code == 403
    assert client.post(role_url(org_a, membership(org_a, bob)), {"role": "owner"}).status_code == 403
    assert client.post(remove_url(org_a, alices)).status_code == 403

    assert mailoutbox == [] and Invitation.objects.count() == 1
    assert sorted(org_a.memberships.values_list("user__email", "role")) == [
        ("alice@agency-a.test", "owner"), ("bob@agency-a.test", "viewer")]


@pytest.mark.parametrize("name", ["Invitations", "New"])
def test_it_keeps_slugs_clear_of_the_fixed_org_urls(login, charlie, name):
    client = login(charlie)
    client.post(reverse("orgs:create"), {"name": name})
    org = Organization.objects.get()

    assert client.get(settings_url(org)).status_code == 200
    assert client.post(invite_url(org), {"email": "dave@agency-b.test", "role": "member"}).status_code == 302


def test_an_organizations_pages_all_live_under_o_and_the_old_settings_address_redirects(client, alice, org_a):
    """#30 item 11: URLs mixed /o/<slug>/ and /orgs/<slug>/."""
    from django.urls import reverse

    assert reverse("orgs:settings", args=[org_a.slug]) == f"/o/{org_a.slug}/settings/"
    assert reverse("orgs:invite", args=[org_a.slug]).startswith(f"/o/{org_a.slug}/")
    assert reverse("orgs:create") == "/orgs/new/"
    client.force_login(alice)
    moved = client.get(f"/orgs/{org_a.slug}/settings/?tab=x")
    assert moved.status_code == 301 and moved["Location"] == f"/o/{org_a.slug}/settings/?tab=x"
    assert client.get(moved["Location"]).status_code == 200
