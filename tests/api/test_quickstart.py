"""docs/api.md's quick start, run as written: every ```sh block, in order, in one bash, against a
live server, a real Celery worker (scan and browser queues) and a local TLS site of the lab."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"


def shell_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", markdown, flags=re.S | re.M)


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def write_script(tmp_path) -> Path:
    """The blocks as one script, with nothing added: the page itself must say `set -euo pipefail`. The
    reader runs it from a checkout: the scratch directory gets a manage.py and a .venv of its own."""
    blocks = shell_blocks(DOC.read_text())
    assert len(blocks) >= 7, "the quick start lost its steps"
    assert blocks[0].startswith("set -euo pipefail\n"), "the quick start must stop at the first failure"
    (tmp_path / "manage.py").symlink_to(ROOT / "manage.py")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    script = tmp_path / "quickstart.sh"
    script.write_text("\n".join(blocks))
    return script


# What a reader's shell does not have (make test sets them for the suite): the script must not need them.
NOT_IN_A_READERS_SHELL = ("TLSAUDIT_DEV", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")


def run_script(script: Path, **env) -> subprocess.CompletedProcess:
    """The reader's shell, pointed at the live server's database (theirs is the one `make run` uses)."""
    reader = {k: v for k, v in os.environ.items() if k not in NOT_IN_A_READERS_SHELL}
    env = {**reader, "DATABASE_URL": database_url(), **env}
    return subprocess.run(["bash", str(script)], env=env, cwd=script.parent, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.django_db(transaction=True)
def test_the_quick_start_runs_as_written(live_server, org_a, tls_lab, start_worker_on, tmp_path):
    from tlsaudit.api.models import ApiKey
    from tlsaudit.audits.models import Audit
    from tlsaudit.reports.models import Report
    from tlsaudit.sites.models import Site

    start_worker_on(("default", "scan", "browser"))
    # The lab's certificates name localhost and are signed by its own CA: the custom CA and the
    # pinned IP, both set through the API by the script, are what make the audit an A+.
    run = run_script(write_script(tmp_path), TLSAUDIT=live_server.url, ORG=org_a.slug,
                     HOST=f"localhost:{tls_lab.port('a_plus_ecdsa_tls13_hsts')}", PIN_IP="127.0.0.1",
                     CA_FILE=str(tls_lab.ca_file))
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert '"grade": "A+"' in run.stdout and '"status": "done"' in run.stdout, run.stdout
    assert '"ip": "127.0.0.1"' in run.stdout
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF-")
    assert "%PDF-" in run.stdout
    assert ApiKey.objects.get(organization=org_a).name == "quick start"
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem.strip() == tls_lab.ca_file.read_text().strip()
    assert Site.objects.get(organization=org_a).pinned_ip == "127.0.0.1"
    assert Audit.objects.get(organization=org_a).ip == "127.0.0.1"
    assert Report.objects.get(organization=org_a).status == "done"


@pytest.mark.django_db(transaction=True)
def test_the_quick_start_stops_at_the_first_failure(live_server, org_a, tmp_path):
    from tlsaudit.audits.models import Audit

    run = run_script(write_script(tmp_path), TLSAUDIT=live_server.url, ORG=org_a.slug, HOST="not a host name")
    assert run.returncode != 0
    assert "error: 422" in run.stderr   # the site was refused: nothing after it ran
    assert "audit at" not in run.stdout and not Audit.objects.exists()
