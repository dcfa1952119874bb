"""docker-compose.yml, Dockerfile, .env.example and the README cannot run here (no Docker
engine), so their shape is checked: services, commands, environment, documented variables."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_six_services_from_one_image():
    services = compose()["services"]
    assert set(services) == {"web", "worker", "jobs", "beat", "postgres", "redis"}
    for name in ("web", "worker", "jobs", "beat"):
        assert services[name]["build"] == "." and services[name]["image"] == "tlsaudit:latest", name
        assert services[name]["env_file"] == ".env"
        assert services[name]["environment"]["DATABASE_URL"].startswith("postgres://")
        assert services[name]["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert (ROOT / "Dockerfile").exists()


def test_compose_commands_start_gunicorn_worker_and_beat():
    services = compose()["services"]
    assert "gunicorn tlsaudit.wsgi" in services["web"]["command"]
    assert "migrate" in services["web"]["command"]
    # The scan pool consumes the scan queue alone, with threads; every other queue has a prefork worker.
    assert "celery -A workers worker -Q scan --pool threads" in services["worker"]["command"]
    assert services["jobs"]["command"].startswith("celery -A workers worker -Q load,browser,default")
    assert services["beat"]["command"].startswith("celery -A workers beat")
    assert "healthz" in " ".join(services["web"]["healthcheck"]["test"])


def test_the_procfile_runs_web_worker_and_beat():
    lines = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    assert set(lines) == {"web", "worker", "jobs", "beat"}
    assert "celery -A workers worker -Q scan --pool threads" in lines["worker"]
    assert "-Q load,browser,default" in lines["jobs"] and "celery -A workers beat" in lines["beat"]


def test_env_example_documents_every_variable_the_settings_read():
    settings_src = (ROOT / "tlsaudit" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|bool|int|list|url)\(\s*"([A-Z_]+)"', settings_src))
    read |= set(re.findall(r'os\.environ\.get\(\s*"([A-Z_]+)"', settings_src))
    documented = set(re.findall(r"^([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert read, "no variables found: the pattern is out of date"
    assert read - documented == set(), f"undocumented: {sorted(read - documented)}"


def test_the_readme_quick_start_is_exactly_make_run_and_make_test():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\s*(make \w+)\s*$", quick_start, re.M)
    assert commands == ["make run", "make test"]
    # CI runs the README's test command, then the fuzzing phase as its own step (#25)
    steps = re.findall(r"^make (\w+)$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert steps[-2:] == ["test", "fuzz"]


def test_the_licence_is_agpl():
    assert "GNU AFFERO GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text()[:200]
    assert 'license = "AGPL-3.0-or-later"' in (ROOT / "pyproject.toml").read_text()


def test_requirements_are_pinned():
    lines = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.]+", ln) for ln in lines), lines
    assert any(ln.startswith("Django==5.2.") for ln in lines)


def test_the_compose_workers_run_with_the_procfiles_flags():
    """Without gossip and mingle (#35: gossip's restart after a Redis outage left a worker consuming
    nothing), the same in the Procfile and in docker-compose.yml."""
    compose = (ROOT / "docker-compose.yml").read_text()
    procfile = (ROOT / "Procfile").read_text()
    for text in (compose, procfile):
        workers = [line for line in text.splitlines() if "celery -A workers worker" in line]
        assert len(workers) == 2, workers
        assert all("--without-gossip --without-mingle" in line for line in workers), workers
