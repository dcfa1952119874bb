"""docs/api.md's quick start, run as written: every ```sh block, in order, in one bash, against a
live server, a real Celery worker (scan and browser queues) and a local TLS site of the lab."""

import os
import re
import subprocess
import sys
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


@pytest.mark.django_db(transaction=True)
def test_the_quick_start_runs_as_written(live_server, lab_org, tls_lab, start_worker_on, tmp_path):
    from tlsaudit.api.models import ApiKey
    from tlsaudit.reports.models import Report

    start_worker_on(("default", "scan", "browser"))
    blocks = shell_blocks(DOC.read_text())
    assert len(blocks) >= 6, "the quick start lost its steps"
    env = {**os.environ, "TLSAUDIT": live_server.url, "ORG": lab_org.slug,
           "HOST": f"127.0.0.1:{tls_lab.port('a_plus_ecdsa_tls13_hsts')}", "DATABASE_URL": database_url(),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    # The reader runs it from a checkout: give the scratch directory a manage.py of its own.
    (tmp_path / "manage.py").symlink_to(ROOT / "manage.py")
    script = "set -euo pipefail\n" + "\n".join(blocks)
    (tmp_path / "quickstart.sh").write_text(script)
    run = subprocess.run(["bash", str(tmp_path / "quickstart.sh")], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert '"grade": "A+"' in run.stdout and '"status": "done"' in run.stdout, run.stdout
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF-")
    assert "%PDF-" in run.stdout
    assert ApiKey.objects.get(organization=lab_org).name == "quick start"
    assert Report.objects.get(organization=lab_org).status == "done"
