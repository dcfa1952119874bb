"""Issue #17 item 4: the pages the README promises are reachable where a user looks for them."""

import base64

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tlsaudit.reports.models import Report, ReportBranding

# The smallest valid PNG (1x1, transparent).
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def test_it_links_api_keys_from_the_org_menu_and_settings_for_owners_only(login, alice, bob, org_a):
    keys_url = reverse("api_keys:list", args=[org_a.slug])
    owner_page = login(alice).get(reverse("sites:list", args=[org_a.slug])).content.decode()
    assert f'href="{keys_url}"' in owner_page
    settings_page = login(alice).get(reverse("orgs:settings", args=[org_a.slug])).content.decode()
    assert 'data-testid="api-keys-link"' in settings_page
    # Bob is a viewer: the keys page would refuse him, so no link leads there.
    viewer_page = login(bob).get(reverse("sites:list", args=[org_a.slug])).content.decode()
    assert keys_url not in viewer_page


def test_the_portfolio_page_has_a_pdf_button_that_queues_the_report(login, alice, bob, org_a):
    page = login(alice).get(reverse("monitoring:portfolio", args=[org_a.slug])).content.decode()
    action = reverse("reports:request_portfolio", args=[org_a.slug])
    assert 'data-testid="portfolio-pdf"' in page and f'action="{action}"' in page
    response = login(alice).post(action)
    report = Report.objects.get(organization=org_a, kind="portfolio")
    assert response.status_code == 302 and response["Location"] == report.get_absolute_url()
    # Bob, a viewer (the agency's client), gets the PDF of what he sees too (#37 item 11).
    assert 'data-testid="portfolio-pdf"' in login(bob).get(
        reverse("monitoring:portfolio", args=[org_a.slug])).content.decode()


def test_an_owner_uploads_a_logo_that_the_reports_print(login, alice, org_a):
    client = login(alice)
    page = client.get(reverse("orgs:settings", args=[org_a.slug])).content.decode()
    assert 'enctype="multipart/form-data"' in page and 'name="logo"' in page
    response = client.post(reverse("reports:branding", args=[org_a.slug]),
                           {"logo": SimpleUploadedFile("logo.png", PNG, "image/png"), "accent_color": "#aa0000"})
    assert response.status_code == 302
    branding = ReportBranding.objects.get(organization=org_a)
    assert branding.logo_data_uri == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert branding.accent_color == "#aa0000"
    from tlsaudit.reports.presenters import branding_of

    assert branding_of(org_a)["logo"] == branding.logo_data_uri
    assert 'data-testid="logo-preview"' in client.get(reverse("orgs:settings", args=[org_a.slug])).content.decode()
    # Removing it keeps the colour.
    client.post(reverse("reports:branding", args=[org_a.slug]), {"remove_logo": "on", "accent_color": "#aa0000"})
    branding.refresh_from_db()
    assert branding.logo_data_uri == "" and branding.accent_color == "#aa0000"


def test_a_logo_that_is_not_png_or_jpeg_or_too_big_is_refused_with_the_reason(login, alice, org_a):
    client = login(alice)
    url = reverse("reports:branding", args=[org_a.slug])
    # An SVG can carry script: refused whatever content type the browser claims.
    refused = client.post(url, {"logo": SimpleUploadedFile("logo.png", SVG, "image/png"), "accent_color": "#1f4e9c"},
                          follow=True)
    assert "This is not a PNG or JPEG image." in refused.content.decode()
    big = PNG + b"\0" * 200_001
    refused = client.post(url, {"logo": SimpleUploadedFile("big.png", big, "image/png"), "accent_color": "#1f4e9c"},
                          follow=True)
    assert "at most 200,000" in refused.content.decode()
    assert not ReportBranding.objects.filter(organization=org_a).exclude(logo_data_uri="").exists()


def test_a_viewer_cannot_change_the_branding(login, bob, org_a):
    response = login(bob).post(reverse("reports:branding", args=[org_a.slug]),
                               {"logo": SimpleUploadedFile("logo.png", PNG, "image/png"), "accent_color": "#000000"})
    assert response.status_code == 403
    assert not ReportBranding.objects.filter(organization=org_a).exists()
