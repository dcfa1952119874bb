"""#36 item 1: queries bounded by the organization's own data, not the instance's. Read from PostgreSQL's own
EXPLAIN (ANALYZE) on a seeded table, so a plan that reads more than a page of rows fails here, not in
production at 941,000 audits.

The seed is shaped like the case that hurt: one organization whose audits are all old (lowest ids), two
whose audits are many and newer, so walking the primary key backwards, or sorting the organization's whole
history, reads thousands of rows for a page of 25."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.support.api import client_with, make_key
from tests.support.sites import added_site
from tlsaudit.api import keys
from tlsaudit.audits.models import Audit
from tlsaudit.monitoring import schedules
from tlsaudit.monitoring.models import SiteSchedule
from tlsaudit.orgs.models import Organization
from tlsaudit.sites.models import Site, Tag, tagged

pytestmark = pytest.mark.django_db
PAGE = 50   # the API's default page size
OLD_AUDITS, NEWER_AUDITS = 400, 3000


def seed_audits(org, count: int, sites: int = 4) -> list[Site]:
    made = [added_site(organization=org, hostname=f"s{n}.{org.slug}.test") for n in range(sites)]
    now = timezone.now()
    Audit.objects.bulk_create([Audit(site=made[i % sites], organization=org, status="done", grade="A", host="h",
                                     port=443, created_at=now - timedelta(minutes=i)) for i in range(count)],
                              batch_size=1000)
    return made


@pytest.fixture
def skewed(org_a):
    """Agency A's audits are all older than everyone else's."""
    seed_audits(org_a, OLD_AUDITS)
    others = [Organization.objects.create(name=f"Busy {n}") for n in range(2)]
    for org in others:
        seed_audits(org, NEWER_AUDITS)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audits_audit")
    return others


def plan_of(sql: str, params=()) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
        raw = cursor.fetchone()[0]
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from nodes(child)


def rows_read(plan: dict) -> int:
    """Rows the scans produced or threw away: what the page cost, whatever the plan's shape."""
    return max((node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get("Actual Loops", 1)
               for node in nodes(plan) if "Scan" in node["Node Type"])


def captured_select(queries, table: str) -> str:
    return next(q["sql"] for q in queries if q["sql"].startswith("SELECT") and f'FROM "{table}"' in q["sql"]
                and "LIMIT" in q["sql"])


def test_the_apis_first_page_of_audits_reads_a_page_of_rows_from_the_composite_index(skewed, org_a):
    api = client_with(make_key(org_a, keys.READ_ONLY)[1])
    with CaptureQueriesContext(connection) as queries:
        page = api.get("/api/v1/audits/")
    assert page.status_code == 200 and len(page.json()["results"]) == PAGE
    plan = plan_of(captured_select(queries.captured_queries, "audits_audit"))
    used = {node.get("Index Name") for node in nodes(plan)}
    assert "audit_org_newest_id" in used, json.dumps(plan)[:1500]
    assert rows_read(plan) <= PAGE + 1, json.dumps(plan)[:1500]
    assert not any(node["Node Type"] == "Sort" for node in nodes(plan)), "the index gives the order"


def test_a_sites_first_page_of_audits_reads_a_page_of_rows(skewed, org_a):
    site = Site.objects.filter(organization=org_a).first()
    api = client_with(make_key(org_a, keys.READ_ONLY)[1])
    with CaptureQueriesContext(connection) as queries:
        assert api.get(f"/api/v1/sites/{site.pk}/audits/").status_code == 200
    plan = plan_of(captured_select(queries.captured_queries, "audits_audit"))
    assert rows_read(plan) <= PAGE + 1, json.dumps(plan)[:1500]


def test_the_admin_changelist_neither_sorts_counts_nor_lists_distinct_grades_over_every_audit(skewed, admin_client):
    url = reverse("admin:audits_audit_changelist")
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(url).status_code == 200
    sql = [q["sql"] for q in queries.captured_queries if "audits_audit" in q["sql"]]
    assert not any("DISTINCT" in q for q in sql), "the grade filter lists the rules' grades"
    listing = next(q for q in sql if q.startswith("SELECT") and "LIMIT" in q and "COUNT" not in q)
    assert rows_read(plan_of(listing)) <= 101, "newest first by the primary key, a page at a time"
    assert '"audits_audit"."facts"' not in listing and '"audits_audit"."raw"' not in listing
    for count in (q for q in sql if "COUNT(" in q):
        assert rows_read(plan_of(count)) <= 10_000, count
    assert admin_client.get(url, {"grade": "A"}).status_code == 200
    assert admin_client.get(url, {"grade": "none"}).status_code == 200


def test_a_tag_filter_reads_the_organizations_tag_only(org_a, org_b):
    """Every agency tags "eu": the filter finds Agency A's tag by its (organization, name) index."""
    mine = added_site(organization=org_a, hostname="eu.agency-a.test")
    theirs = added_site(organization=org_b, hostname="eu.agency-b.test")
    mine.tags.add(Tag.objects.create(organization=org_a, name="eu"))
    theirs.tags.add(Tag.objects.create(organization=org_b, name="eu"))
    for n in range(200):
        Tag.objects.create(organization=Organization.objects.create(name=f"Agency {n}"), name="eu")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE sites_tag")
    found = tagged(Site.objects.filter(organization=org_a), org_a.pk, "eu")
    assert list(found) == [mine]
    tag_scans = [node for node in nodes(plan_of(*found.query.sql_with_params()))
                 if node.get("Relation Name") == "sites_tag"]
    assert tag_scans and all(node["Actual Rows"] * node.get("Actual Loops", 1) <= 1 for node in tag_scans)


def test_the_busiest_minute_counts_this_organizations_schedules_only(org_a, org_b):
    for org, count in ((org_a, 3), (org_b, 5)):
        for n in range(count):
            site = added_site(organization=org, hostname=f"n{n}.{org.slug}.test")
            SiteSchedule.objects.update_or_create(site=site, defaults={"hour": 2, "minute": 0})
    with CaptureQueriesContext(connection) as queries:
        policy = schedules.policy_with_load(org_a)
    assert (policy.scheduled, policy.busiest) == (3, 3)
    grouped = next(q["sql"] for q in queries.captured_queries if "monitoring_siteschedule" in q["sql"])
    assert f'"sites_site"."organization_id" = {org_a.pk}' in grouped
