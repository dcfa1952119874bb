"""Migration 0003 (issue 14): proofs made under the old rule stop counting, and every row gets its
public file id; the secret (the old token) is kept. Runs the real migrations on PostgreSQL."""

import pytest
from django.utils import timezone

from tests.support.migrations import latest, migrate
from tests.support.sites import added_site
from tlsaudit.loadtests.verification import verification_for
from tlsaudit.sites.models import Site

BEFORE = [("loadtests", "0002_results_lz4")]
AFTER = [("loadtests", "0003_proof_public_id_secret")]


@pytest.mark.django_db(transaction=True)
def test_old_proofs_are_withdrawn_with_the_reason_and_keep_their_secret(org_a):
    # Given two sites proven under the old rule and one never proven
    sites = [added_site(organization=org_a, hostname=f"s{i}.example.com") for i in range(3)]
    old = migrate(BEFORE).get_model("loadtests", "SiteVerification")
    now = timezone.now()
    old.objects.create(site_id=sites[0].pk, token="a" * 32, method="http", verified_at=now, last_checked_at=now)
    old.objects.create(site_id=sites[1].pk, token="b" * 32, method="dns", verified_at=now, last_checked_at=now)
    old.objects.create(site_id=sites[2].pk, token="c" * 32, last_error="HTTP file: connection refused")

    # When the migration runs (and the later ones, so today's models read the rows)
    migrate(AFTER)
    migrate(latest())

    # Then no proof counts any more, each says why, and each has its own public id beside its kept secret
    rows = [verification_for(Site.objects.get(pk=site.pk)) for site in sites]
    assert [row.is_verified for row in rows] == [False, False, False]
    assert [row.secret for row in rows] == ["a" * 32, "b" * 32, "c" * 32]
    assert all("Proofs made before the change no longer count" in row.last_error for row in rows[:2])
    assert rows[2].last_error == "HTTP file: connection refused"
    ids = [row.public_id for row in rows]
    assert len(set(ids)) == 3 and all(len(public_id) == 16 for public_id in ids)
    assert all(row.secret not in row.file_path for row in rows)
