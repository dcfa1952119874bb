"""CSV import by header names (#37 items 2 and 3): the API's own `sites.csv` imports back unchanged, a
`;`-separated file from a spreadsheet imports, columns come in any order, and a header without a
hostname column says so and adds nothing."""

import html

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tlsaudit.sites.models import Site

SITES = "/api/v1/sites/"
KEPT = ("hostname", "service", "name", "https_port", "http_port", "pinned_ip")


def import_file(client, org, content: str, name: str = "sites.csv") -> str:
    upload = SimpleUploadedFile(name, content.encode("utf-8-sig"), content_type="text/csv")
    response = client.post(reverse("sites:import", args=[org.slug]), {"csv_file": upload})
    return html.unescape(response.content.decode())


def described(org) -> list[tuple]:
    return sorted((*(getattr(site, field) or "" for field in KEPT), tuple(sorted(site.tags.values_list("name", flat=True))))
                  for site in Site.objects.filter(organization=org))


def test_the_apis_own_sites_csv_imports_back_unchanged(api, login, charlie, org_a, org_b):
    for body in ({"hostname": "a.example.com:8443", "http_port": 8080, "pinned_ip": "192.0.2.5",
                  "name": "=SUM(A1)|Client A", "tags": ["client-a", "prod"]},
                 {"hostname": "smtp://mail.example.com", "name": "Mail; relay, main"},
                 {"hostname": "bücher.example"}):
        assert api.post(SITES, body, format="json").status_code == 201, body
    exported = b"".join(api.get(SITES, {"format": "csv"}).streaming_content).decode()
    assert exported.splitlines()[0].startswith("id,url,hostname,")   # the API's columns, not ours

    page = import_file(login(charlie), org_b, exported)

    assert "3 added, 0 rejected" in page, page
    assert described(org_b) == described(org_a)
    assert Site.objects.get(organization=org_b, hostname="a.example.com").name == "=SUM(A1)|Client A"


def test_a_semicolon_file_with_its_columns_in_another_order_imports(login, alice, org_a):
    spreadsheet = ("Tags;Name;Hostname;HTTPS port\r\n"
                   "client-a;Acme, Inc;shop.example.com;8443\r\n"
                   "client-b;Beta;blog.example.com;\r\n")

    page = import_file(login(alice), org_a, spreadsheet)

    assert "2 added, 0 rejected" in page, page
    assert described(org_a) == [
        ("blog.example.com", "https", "Beta", 443, 80, "", ("client-b",)),
        ("shop.example.com", "https", "Acme, Inc", 8443, 80, "", ("client-a",)),
    ]


def test_a_tab_separated_file_without_a_header_reads_by_position(login, alice, org_a):
    page = import_file(login(alice), org_a, "a.example.com\t8443\t\t192.0.2.7\tSite A\n", "sites.tsv")
    assert "1 added, 0 rejected" in page, page
    assert described(org_a) == [("a.example.com", "https", "Site A", 8443, 80, "192.0.2.7", ())]


def test_a_header_without_a_hostname_column_says_which_to_add_and_adds_nothing(login, alice, org_a):
    page = import_file(login(alice), org_a, "site,tags\na.example.com,x\n")
    assert "0 added, 1 rejected" in page, page
    assert "The header row names no hostname column (it has 'site', 'tags')" in page
    assert not Site.objects.filter(organization=org_a).exists()
    # the file's rows are not in the box (#37 item 11): the page says to fix the file instead
    assert "back in the box" not in page and "Correct the rejected rows in the file" in page


def test_an_old_mac_file_with_a_row_number_column_and_hashes_in_names_imports(login, alice, org_a):
    # CR-only line ends (Excel's "Macintosh CSV"), a "#" column of row numbers, a name starting with #
    page = import_file(login(alice), org_a, "#,Hostname,Name\r1,a.example.com,#1 Store\r2,b.example.com,Beta\r")
    assert "2 added, 0 rejected" in page, page
    assert sorted(Site.objects.filter(organization=org_a).values_list("name", flat=True)) == ["#1 Store", "Beta"]


def test_a_file_that_is_not_csv_past_some_line_keeps_the_rows_before_and_says_where(login, alice, org_a):
    page = import_file(login(alice), org_a, 'a.example.com\n"' + "x" * 140_000 + '"\nb.example.com\n')
    assert "1 added, 1 rejected" in page, page[:2000]
    assert "The file cannot be read as CSV from line 2 on (field larger than field limit" in page
    assert list(Site.objects.filter(organization=org_a).values_list("hostname", flat=True)) == ["a.example.com"]
