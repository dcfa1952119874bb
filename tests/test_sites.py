"""Sites: the form's errors, IDN, bulk import, list filters, and who may see or change what."""

import html

import pytest
from django.urls import reverse

from tlsaudit.monitoring.models import SiteSchedule
from tlsaudit.sites.models import Site


def text(response) -> str:
    return html.unescape(response.content.decode())


def add_url(org):
    return reverse("sites:add", args=[org.slug])


def post_site(client, org, **data):
    return client.post(add_url(org), {"address": "", "https_port": "", "http_port": "", "pinned_ip": "",
                                       "name": "", "tags_text": "", **data})


# --- the add form: one test per field error -------------------------------------------------

@pytest.mark.parametrize("address, message", [
    ("", "This field is required."),
    ("https://example.com/login", "without a path or query"),
    ("example.com/login", "without a path"),
    ("gopher://example.com", "gopher:// is not a TLS service we audit"),
    ("https://user:pw@example.com/", "Remove the user name and password"),
    ("intranet", "is not a full domain name"),
    ("exa mple.com", "cannot contain spaces"),
    ("-bad-.example.com", "not a valid host name"),
    ("a" * 64 + ".example.com", "not a valid"),
    ("example.com:0", "Port 0 is out of range"),
    ("example.com:70000", "Port 70000 is out of range"),
    ("example.com:https", "is not a number"),
    ("999.1.2.3", "looks like an IP address but is not a valid one"),
])
def test_it_rejects_bad_addresses_with_a_clear_message(login, alice, org_a, address, message):
    response = post_site(login(alice), org_a, address=address)
    assert response.status_code == 400
    assert message in text(response)
    assert not Site.objects.exists()


@pytest.mark.parametrize("field, value, message", [
    ("https_port", "0", "Port 0 is out of range"),
    ("https_port", "65536", "Port 65536 is out of range"),
    ("https_port", "abc", "is not a number"),
    ("http_port", "-1", "Port -1 is out of range"),
    ("http_port", "99999", "Port 99999 is out of range"),
    ("pinned_ip", "300.1.1.1", "Enter a valid IPv4 or IPv6 address."),
    ("pinned_ip", "example.com", "Enter a valid IPv4 or IPv6 address."),
    ("name", "x" * 121, "Ensure this value has at most 120 characters"),
    ("tags_text", "ok, not/valid", "Tag 'not/valid' is not valid"),
])
def test_it_rejects_each_bad_field_with_its_message(login, alice, org_a, field, value, message):
    response = post_site(login(alice), org_a, address="example.com", **{field: value})
    assert response.status_code == 400
    assert message in text(response)
    assert not Site.objects.exists()


def test_it_refuses_a_port_that_contradicts_the_address(login, alice, org_a):
    response = post_site(login(alice), org_a, address="example.com:8443", https_port="443")
    assert "The address says port 8443 but this field says 443." in text(response)


def test_it_refuses_a_duplicate_within_the_organization(login, alice, org_a, site_a):
    response = post_site(login(alice), org_a, address="https://SHOP.example.com/")
    assert response.status_code == 400
    assert "shop.example.com is already in this organization." in text(response)
    assert Site.objects.filter(organization=org_a).count() == 1


def test_it_allows_the_same_host_in_another_organization(login, charlie, org_b, site_a):
    response = post_site(login(charlie), org_b, address="shop.example.com")
    assert response.status_code == 302
    assert Site.objects.filter(hostname="shop.example.com").count() == 2


def test_it_allows_the_same_host_on_another_port(login, alice, org_a, site_a):
    post_site(login(alice), org_a, address="shop.example.com:8443")
    assert sorted(Site.objects.values_list("https_port", flat=True)) == [443, 8443]


def test_it_normalises_a_pasted_url_and_stores_idn_as_punycode(login, alice, org_a):
    client = login(alice)
    response = post_site(client, org_a, address="https://Bücher.Example:8443/", tags_text="Client-A, prod")
    site = Site.objects.get()
    assert (site.hostname, site.https_port, site.http_port) == ("xn--bcher-kva.example", 8443, 80)
    assert sorted(site.tags.values_list("name", flat=True)) == ["client-a", "prod"]
    assert response["Location"] == site.get_absolute_url()
    page = text(client.get(reverse("sites:list", args=[org_a.slug])))
    assert "bücher.example" in page


def test_an_http_url_sets_the_http_port(login, alice, org_a):
    post_site(login(alice), org_a, address="http://example.com:8080/")
    site = Site.objects.get()
    assert (site.https_port, site.http_port) == (443, 8080)


def test_it_edits_a_site_and_keeps_its_tags(login, alice, org_a, site_a):
    client = login(alice)
    url = reverse("sites:edit", args=[org_a.slug, site_a.pk])
    response = client.post(url, {"address": "shop.example.com", "https_port": "443", "http_port": "8080",
                                 "pinned_ip": "192.0.2.10", "name": "Shop (prod)", "tags_text": "prod"})
    assert response.status_code == 302
    site_a.refresh_from_db()
    assert (site_a.http_port, site_a.pinned_ip, site_a.name) == (8080, "192.0.2.10", "Shop (prod)")
    assert list(site_a.tags.values_list("name", flat=True)) == ["prod"]


def test_a_failed_edit_loses_nothing(login, alice, org_a, site_a):
    url = reverse("sites:edit", args=[org_a.slug, site_a.pk])
    response = login(alice).post(url, {"address": "shop.example.com/x", "https_port": "443", "http_port": "80",
                                       "name": "Changed"})
    assert response.status_code == 400
    assert 'value="Changed"' in text(response)  # what was typed is still in the form
    site_a.refresh_from_db()
    assert site_a.name == "Shop"


# --- bulk import ------------------------------------------------------------------------------

def test_it_imports_a_pasted_list_and_reports_each_line(login, alice, org_a, site_a):
    pasted = "\n".join(["example.com", "# a comment", "", "shop.example.com", "api.example.com:8443",
                      "https://x.example.org/path", "not a host", "example.com"])
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]),
                                 {"lines": pasted, "tags_text": "imported"})
    page = text(response)
    assert response.status_code == 200
    assert "2 added, 4 rejected" in page
    assert "already in this organization" in page          # shop.example.com, and the repeated example.com
    assert "without a path or query" in page
    assert "cannot contain spaces" in page
    hosts = set(Site.objects.filter(organization=org_a).values_list("hostname", "https_port"))
    assert hosts == {("shop.example.com", 443), ("example.com", 443), ("api.example.com", 8443)}
    assert Site.objects.get(hostname="api.example.com").tags.get().name == "imported"
    assert set(SiteSchedule.objects.filter(site__organization=org_a).values_list("site__hostname", flat=True)) == {
        "shop.example.com", "example.com", "api.example.com"}   # every imported site has its nightly schedule


def test_it_imports_a_csv_with_header_and_columns(login, alice, org_a):
    from django.core.files.uploadedfile import SimpleUploadedFile

    csv_text = ("hostname,https_port,http_port,pinned_ip,name,tags\n"
                "a.example.com,8443,8080,192.0.2.5,Site A,client-a;prod\n"
                "b.example.com,99999,,,,\n"
                "c.example.com\n")
    upload = SimpleUploadedFile("sites.csv", csv_text.encode(), content_type="text/csv")
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]), {"csv_file": upload})
    page = text(response)
    assert "2 added, 1 rejected" in page
    assert "Port 99999 is out of range" in page
    a = Site.objects.get(hostname="a.example.com")
    assert (a.https_port, a.http_port, a.pinned_ip, a.name) == (8443, 8080, "192.0.2.5", "Site A")
    assert sorted(a.tags.values_list("name", flat=True)) == ["client-a", "prod"]


@pytest.mark.parametrize("data, message", [
    ({"lines": "   "}, "Paste at least one host name or choose a CSV file."),
    ({"lines": "a.example.com", "tags_text": "bad tag!"}, "is not valid"),
])
def test_the_import_form_explains_bad_input(login, alice, org_a, data, message):
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]), data)
    assert response.status_code == 400
    assert message in text(response)
    assert not Site.objects.exists()


def test_the_import_refuses_a_file_that_is_not_utf8(login, alice, org_a):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("sites.csv", "bücher.example\n".encode("utf-16"), content_type="text/csv")
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]), {"csv_file": upload})
    assert "The file is not UTF-8 text" in text(response)


def test_the_import_refuses_too_many_lines_at_once(login, alice, org_a):
    pasted = "\n".join(f"s{i}.example.com" for i in range(1001))
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]), {"lines": pasted})
    assert "more than the 1000 a single import takes" in text(response)
    assert not Site.objects.exists()


# --- list: filters, sorting, pagination ------------------------------------------------------

def test_the_list_filters_by_tag_and_search_and_sorts(login, alice, org_a):
    client = login(alice)
    client.post(reverse("sites:import", args=[org_a.slug]), {"lines": "b.example.com\na.example.com"})
    client.post(reverse("sites:import", args=[org_a.slug]), {"lines": "c.example.com", "tags_text": "vip"})
    url = reverse("sites:list", args=[org_a.slug])
    assert _hosts(client.get(url, {"tag": "vip"})) == ["c.example.com"]
    assert _hosts(client.get(url, {"q": "a.ex"})) == ["a.example.com"]
    assert _hosts(client.get(url, {"sort": "-host"})) == ["c.example.com", "b.example.com", "a.example.com"]


def test_the_list_paginates(login, alice, org_a):
    Site.objects.bulk_create([Site(organization=org_a, hostname=f"s{i:02}.example.com") for i in range(30)])
    client = login(alice)
    url = reverse("sites:list", args=[org_a.slug])
    assert len(_hosts(client.get(url))) == 25
    assert _hosts(client.get(url, {"page": 2})) == [f"s{i}.example.com" for i in range(25, 30)]


def test_htmx_requests_get_only_the_table_partial(login, alice, org_a, site_a):
    response = login(alice).get(reverse("sites:list", args=[org_a.slug]), HTTP_HX_REQUEST="true")
    page = text(response)
    assert page.lstrip().startswith('<div id="site-table">')
    assert "<html" not in page


def test_a_new_organization_shows_what_to_do_next(login, alice, org_a):
    page = text(login(alice).get(reverse("sites:list", args=[org_a.slug])))
    assert "No sites yet" in page and "Add a site" in page


def _hosts(response):
    import re

    return re.findall(r'<a href="/o/[^"]+/sites/\d+/">([^<]+)</a>', text(response))


# --- who sees what -------------------------------------------------------------------------

def site_urls(site):
    org = site.organization.slug
    return {
        "detail": ("get", reverse("sites:detail", args=[org, site.pk])),
        "edit": ("get", reverse("sites:edit", args=[org, site.pk])),
        "delete": ("post", reverse("sites:delete", args=[org, site.pk])),
        "list": ("get", reverse("sites:list", args=[org])),
        "add": ("get", reverse("sites:add", args=[org])),
        "import": ("get", reverse("sites:import", args=[org])),
    }


def test_alice_the_owner_can_do_everything(login, alice, site_a):
    client = login(alice)
    for name, (method, url) in site_urls(site_a).items():
        if name != "delete":
            assert getattr(client, method)(url).status_code == 200, name
    assert client.post(site_urls(site_a)["delete"][1]).status_code == 302
    assert not Site.objects.filter(pk=site_a.pk).exists()


def test_bob_the_viewer_sees_but_cannot_change(login, bob, site_a):
    client = login(bob)
    urls = site_urls(site_a)
    for name in ("detail", "list"):
        assert client.get(urls[name][1]).status_code == 200, name
    for name in ("edit", "add", "import"):
        assert client.get(urls[name][1]).status_code == 403, name
    assert client.post(urls["delete"][1]).status_code == 403
    assert client.post(urls["add"][1], {"address": "x.example.com"}).status_code == 403
    assert Site.objects.filter(pk=site_a.pk).exists()
    assert "Add a site" not in text(client.get(urls["list"][1]))


def test_charlie_of_another_agency_gets_404_everywhere(login, charlie, site_a, site_b):
    client = login(charlie)
    for name, (method, url) in site_urls(site_a).items():
        assert getattr(client, method)(url).status_code == 404, name
    # Right organization in the URL, wrong site id: still 404.
    assert client.get(reverse("sites:detail", args=[site_b.organization.slug, site_a.pk])).status_code == 404
    assert Site.objects.filter(pk=site_a.pk).exists()
    page = text(client.get(reverse("sites:list", args=[site_b.organization.slug])))
    assert "secret.example.org" in page and "shop.example.com" not in page


def test_anonymous_visitors_are_sent_to_login(client, site_a):
    for name, (method, url) in site_urls(site_a).items():
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), name


# --- SSRF guard (production mode: private targets refused) ------------------------------------

@pytest.mark.parametrize("data, field, message", [
    ({"address": "localhost"}, "address", "localhost resolves to 127.0.0.1, which is a loopback address"),
    ({"address": "127.0.0.1"}, "address", "127.0.0.1 is a loopback address"),
    ({"address": "https://[::ffff:127.0.0.1]:8443/"}, "address", "only scans servers on the public internet"),
    ({"address": "192.168.1.20"}, "address", "192.168.1.20 is a private address"),
    ({"address": "169.254.169.254"}, "address", "only scans servers on the public internet"),
    ({"address": "example.com", "pinned_ip": "10.0.0.5"}, "pinned_ip", "10.0.0.5 cannot be audited"),
    ({"address": "example.com", "pinned_ip": "100.64.0.1"}, "pinned_ip", "100.64.0.1 cannot be audited"),
    ({"address": "example.com", "pinned_ip": "::1"}, "pinned_ip", "::1 cannot be audited"),
])
def test_private_targets_are_refused_on_the_form(login, alice, org_a, settings, data, field, message):
    settings.ALLOW_PRIVATE_TARGETS = False
    response = post_site(login(alice), org_a, **data)
    assert response.status_code == 400
    assert message in text(response)
    assert not Site.objects.exists()


def test_a_public_pinned_ip_is_accepted_without_any_lookup(login, alice, org_a, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    post_site(login(alice), org_a, address="example.com", pinned_ip="93.184.216.34")
    assert Site.objects.get().pinned_ip == "93.184.216.34"


def test_the_import_refuses_private_literals_in_production(login, alice, org_a, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]),
                                 {"lines": "10.1.2.3\nnot-yet-launched.invalid"})
    page = text(response)
    assert "1 added, 1 rejected" in page and "10.1.2.3 is a private address" in page


@pytest.mark.parametrize("host, words", [
    ("foo_bar.example.com", "“_” is not allowed in a host name (in “foo_bar”); use letters, digits, hyphens and dots"),
    ("exa mple.com", "a space is not allowed in a host name"),
    ("a..b.com", "two dots in a row"),
    ("ab\u200d.com", "U+200D (zero width joiner) is not allowed in a host name;"),
])
def test_an_invalid_host_name_is_explained_in_words(host, words):
    from tlsaudit.domain.hostnames import AddressError, normalize_hostname

    with pytest.raises(AddressError) as caught:
        normalize_hostname(host)
    assert words in str(caught.value) and "Codepoint" not in str(caught.value)
