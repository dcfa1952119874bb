"""While PostgreSQL is down, the web app (gunicorn, as in production) answers a friendly 503: an
HTML page for people, the API's error JSON under /api/, /healthz saying the database is down. No
traceback, no bare 500; and it serves again, without a restart, once the database is back."""

import pytest
import requests

pytestmark = pytest.mark.worker
PASSWORD = "correct horse battery staple"
WELL_FORMED_KEY = "tlar_0123456789_" + "a" * 40  # looks like a key, so it is looked up in the database
HEALTHZ_TOKEN = "monitoring-token-" + "m" * 32     # /healthz shows its details only with it (or to staff)


def log_in(base: str, email: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{base}/accounts/login/", timeout=10)
    response = session.post(f"{base}/accounts/login/", timeout=10, allow_redirects=False,
                            data={"username": email, "password": PASSWORD,
                                  "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                            headers={"Referer": f"{base}/accounts/login/"})
    assert response.status_code == 302, response.text[:500]
    return session


def assert_friendly_page(response: requests.Response) -> None:
    assert response.status_code == 503, (response.request.method, response.url, response.text[:300])
    assert response.headers["Content-Type"].startswith("text/html")
    assert response.headers["Retry-After"] == "30"
    assert 'data-testid="unavailable"' in response.text
    assert "TLS Audit is back in a moment" in response.text
    assert "Traceback" not in response.text and "OperationalError" not in response.text


def test_the_web_app_answers_a_friendly_503_while_postgresql_is_down(faults, tls_lab):
    faults.app.env["HEALTHZ_TOKEN"] = HEALTHZ_TOKEN
    web, base = faults.app.web()
    monitor = {"Authorization": f"Bearer {HEALTHZ_TOKEN}"}
    seeded = faults.app.django(f"from tests.faults.seed import *; emit(lab_sites({str(tls_lab.ca_file)!r}, "
                               f"[{tls_lab.port('a_plus_rsa_hsts')}]))")
    sites_page = f"{base}/o/{seeded['orgs'][0]}/sites/"
    alice = log_in(base, "owner0@faults.test")
    assert alice.get(sites_page, timeout=10).status_code == 200
    anonymous = requests.Session()

    faults.pg.stop()
    try:
        # People: pages that read the session, the user, the organization; a form post; anonymous.
        assert_friendly_page(alice.get(sites_page, timeout=10))
        assert_friendly_page(alice.get(f"{base}/", timeout=10))
        # A 404 page shows the user's menu, so it needs the database too: the middleware's fallback path.
        assert_friendly_page(alice.get(f"{base}/no-such-page/", timeout=10))
        assert_friendly_page(alice.post(f"{base}/o/{seeded['orgs'][0]}/sites/{seeded['sites'][0]}/audits/",
                                        headers={"X-CSRFToken": alice.cookies["csrftoken"], "Referer": sites_page},
                                        timeout=10, allow_redirects=False))
        assert_friendly_page(anonymous.post(f"{base}/accounts/login/", timeout=10, allow_redirects=False,
                                            data={"username": "owner0@faults.test", "password": PASSWORD,
                                                  "csrfmiddlewaretoken": alice.cookies["csrftoken"]},
                                            cookies={"csrftoken": alice.cookies["csrftoken"]},
                                            headers={"Referer": f"{base}/accounts/login/"}))
        # What needs no database still works: the landing page and the 503 page's stylesheet.
        assert anonymous.get(f"{base}/", timeout=10).status_code == 200
        assert anonymous.get(f"{base}/static/css/app.css", timeout=10).status_code == 200
        # Programs: the API's error shape, whichever way they authenticate.
        for response in (anonymous.get(f"{base}/api/v1/sites/", timeout=10,
                                       headers={"Authorization": f"Bearer {WELL_FORMED_KEY}"}),
                         alice.get(f"{base}/api/v1/sites/", timeout=10)):
            assert response.status_code == 503
            assert response.headers["Retry-After"] == "30"
            error = response.json()["error"]
            assert error["code"] == "unavailable"
            assert error["message"].startswith("The database is unavailable")
        # Monitoring: /healthz says it is down to anyone, and what is down to the monitor's token.
        health = anonymous.get(f"{base}/healthz", timeout=10)
        assert (health.status_code, health.json()) == (503, {"status": "down"})
        # A signed-in caller too: the session cannot be read to tell staff, so JSON, not the HTML 503 page.
        health = alice.get(f"{base}/healthz", timeout=10)
        assert (health.status_code, health.json()) == (503, {"status": "down"})
        health = anonymous.get(f"{base}/healthz", timeout=10, headers=monitor)
        assert health.status_code == 503
        body = health.json()
        assert body["status"] == "down"
        assert body["checks"]["database"]["ok"] is False
        assert "OperationalError" in body["checks"]["database"]["detail"]
        assert body["checks"]["broker"]["ok"] is True
        assert body["checks"]["worker"] == {"ok": False, "detail": "unknown: the database is down"}
    finally:
        faults.pg.start()

    # Back without restarting the web app: same session, same pages.
    assert alice.get(sites_page, timeout=10).status_code == 200
    assert anonymous.get(f"{base}/healthz", timeout=10, headers=monitor).json()["checks"]["database"]["ok"] is True
    assert web.alive()
    assert "Traceback" not in web.output()
