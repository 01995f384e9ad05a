"""docker/compose.yaml and docker/Dockerfile checked against what the code reads (no engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tpp_portal import settings as portal_settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())
SERVICES = COMPOSE["services"]
PORTAL_SERVICES = ("web", "worker", "beat")


def portal_variables() -> set[str]:
    """Every variable tpp_portal.settings reads (recorded by its Config when the settings loaded)."""
    return set(portal_settings.env.variables)


def simulator_variables() -> set[str]:
    source = (ROOT / "bank_simulator/settings.py").read_text() + (
        ROOT / "bank_simulator/gunicorn.conf.py"
    ).read_text()
    return set(re.findall(r"[\"']((?:BANK_SIM_|PORT|LOG_LEVEL|VAR_DIR)[A-Z_]*)[\"']", source))


def test_the_six_services_each_with_a_health_check():
    assert set(SERVICES) == {"web", "worker", "beat", "bank", "db", "redis"}
    for name, service in SERVICES.items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_exactly_one_beat_and_the_right_commands():
    assert SERVICES["beat"]["deploy"]["replicas"] == 1
    commands = {
        name: " ".join(s["command"]) if isinstance(s["command"], list) else s["command"]
        for name, s in SERVICES.items()
        if name in (*PORTAL_SERVICES, "bank")
    }
    assert "gunicorn tpp_portal.wsgi" in commands["web"] and "manage.py migrate" in commands["web"]
    assert commands["worker"].startswith("celery -A tpp_portal worker")
    assert commands["beat"].startswith("celery -A tpp_portal beat")
    assert "gunicorn bank_simulator.wsgi" in commands["bank"]
    assert "bank_simulator migrate" in commands["bank"]
    assert sum("beat" in c for c in commands.values()) == 1


@pytest.mark.parametrize("service", PORTAL_SERVICES)
def test_portal_services_set_only_variables_the_settings_read(service):
    environment = SERVICES[service]["environment"]
    unknown = set(environment) - portal_variables()
    assert not unknown, f"{service} sets variables the portal never reads: {sorted(unknown)}"
    for required in (
        "DJANGO_ENV",
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "BANK_BASE_URL",
        "ALLOWED_HOSTS",
        "FIELD_ENCRYPTION_KEYS",
        "FIELD_HASH_KEY",
        "EMAIL_URL",
        "PORTAL_BASE_URL",
    ):
        assert required in environment, f"{service} lacks {required}"
    assert environment["DJANGO_ENV"] == "production"
    assert environment["DATABASE_URL"].startswith("postgres://") and "@db:5432/" in environment["DATABASE_URL"]
    assert environment["REDIS_URL"].startswith("redis://redis:6379")


def test_the_sandbox_bank_service_sets_only_variables_the_simulator_reads():
    environment = SERVICES["bank"]["environment"]
    unknown = set(environment) - simulator_variables()
    assert not unknown, f"bank sets variables the simulator never reads: {sorted(unknown)}"
    assert environment["BANK_SIM_DATABASE_URL"].endswith("@db:5432/tpp_bank")


def test_certificate_paths_point_into_the_mounted_pki_folder():
    for service in PORTAL_SERVICES:
        assert "./pki:/run/pki:ro" in SERVICES[service]["volumes"]
        for name in ("BANK_SIGNING_CERT", "BANK_SIGNING_KEY"):
            assert SERVICES[service]["environment"][name].startswith("/run/pki/")


def test_no_secret_is_written_into_the_compose_file():
    for service in SERVICES.values():
        for name, value in (service.get("environment") or {}).items():
            if any(word in name for word in ("SECRET", "PASSWORD", "KEYS", "HASH_KEY", "EMAIL_URL")):
                assert str(value).startswith("${"), f"{name} must come from the environment"


def test_dockerfile_runs_as_non_root_with_gunicorn_from_the_lock_file():
    dockerfile = (ROOT / "docker/Dockerfile").read_text()
    assert re.search(r"^USER tpp$", dockerfile, re.M)
    assert "--require-hashes -r requirements.lock" in dockerfile
    assert '"gunicorn", "tpp_portal.wsgi"' in dockerfile
    assert "DJANGO_ENV=production" in dockerfile


def test_the_image_build_step_that_collects_static_files_runs(tmp_path):
    """The Dockerfile's collectstatic step, run here as written (interpreter and folders swapped for temp ones)."""
    import os
    import subprocess
    import sys

    dockerfile = (ROOT / "docker/Dockerfile").read_text().replace("\\\n", " ")
    step = re.search(r"&& (DJANGO_ENV=production .*?manage\.py collectstatic --noinput)", dockerfile)
    assert step, "the Dockerfile no longer collects static files with the production settings"
    command = (
        step.group(1)
        .replace("/opt/venv/bin/python", sys.executable)
        .replace("/tmp/build-var", str(tmp_path / "build-var"))  # noqa: S108 - the Dockerfile's path, replaced
        .replace("/app/staticfiles", str(tmp_path / "static"))
    )
    subprocess.run(
        [sys.executable, "-m", "devtools.pki", str(tmp_path / "build-var/pki")],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "DATABASE_URL"))}
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "static/staticfiles.json").is_file()
