"""docker/compose.yaml and docker/Dockerfile checked against what the code reads (no engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.deployment import COMPOSE, SERVICES, command, interpolate
from tpp_portal import settings as portal_settings

ROOT = Path(__file__).resolve().parents[2]
PORTAL_SERVICES = ("web", "worker", "beat", "metrics")
ONE_OFF = ("migrate", "bank-migrate")
LONG_RUNNING = ("proxy", *PORTAL_SERVICES, "bank", "db", "redis")
PROXY_TEMPLATE = ROOT / "docker/proxy/default.conf.template"


def portal_variables() -> set[str]:
    """Every variable tpp_portal.settings reads (recorded by its Config when the settings loaded)."""
    return set(portal_settings.env.variables)


def simulator_variables() -> set[str]:
    source = (ROOT / "bank_simulator/settings.py").read_text() + (
        ROOT / "bank_simulator/gunicorn.conf.py"
    ).read_text()
    return set(re.findall(r"[\"']((?:BANK_SIM_|PORT|LOG_LEVEL|VAR_DIR)[A-Z_]*)[\"']", source))


def test_the_services_long_running_ones_with_a_health_check():
    assert set(SERVICES) == {*LONG_RUNNING, *ONE_OFF}
    for name in LONG_RUNNING:
        assert SERVICES[name].get("healthcheck", {}).get("test"), f"{name} has no health check"
        assert SERVICES[name]["restart"] == "unless-stopped"
    for name in ONE_OFF:
        assert SERVICES[name]["restart"] == "no", f"{name} runs once, it must not be restarted"


def test_only_the_proxy_is_published_on_the_host():
    for name, service in SERVICES.items():
        if name != "proxy":
            assert "ports" not in service, f"{name} is published on the host; only the proxy may be"
            assert service.get("network_mode") != "host", name
    published = {interpolate(port, {}).split(":")[-1] for port in SERVICES["proxy"]["ports"]}
    assert published == {"80", "443", "8443"}
    assert SERVICES["proxy"]["image"].startswith("nginx:")


def test_exactly_one_beat_and_the_right_commands():
    assert SERVICES["beat"]["deploy"]["replicas"] == 1
    assert command("web").startswith("gunicorn tpp_portal.wsgi")
    assert command("worker").startswith("celery -A tpp_portal worker")
    assert command("beat").startswith("celery -A tpp_portal beat")
    assert command("bank").startswith("gunicorn bank_simulator.wsgi")
    # One beat in all: no other service runs one, not even a worker with an embedded beat (-B, --beat).
    runs_beat = [name for name in SERVICES if " beat" in command(name)]
    assert runs_beat == ["beat"]
    assert not re.search(r"(^|\s)(-B|--beat)(\s|$)", command("worker"))


def test_migrations_run_once_in_their_own_services_before_anything_that_uses_the_databases():
    assert command("migrate") == "python manage.py migrate --noinput"
    assert "python -m bank_simulator migrate --noinput" in command("bank-migrate")
    assert "sandbox_initialize --if-empty" in command("bank-migrate")
    for name in LONG_RUNNING:
        assert "migrate" not in command(name) and "sandbox_initialize" not in command(name), name
    for name, migration in (
        ("web", "migrate"),
        ("worker", "migrate"),
        ("beat", "migrate"),
        ("metrics", "migrate"),
        ("bank", "bank-migrate"),
    ):
        assert SERVICES[name]["depends_on"][migration] == {"condition": "service_completed_successfully"}, name
        assert SERVICES[name]["depends_on"]["db"] == {"condition": "service_healthy"}, name
    for name in ONE_OFF:
        assert SERVICES[name]["depends_on"] == {"db": {"condition": "service_healthy"}}, name
    for name in ("web", "bank"):
        assert SERVICES["proxy"]["depends_on"][name] == {"condition": "service_healthy"}


@pytest.mark.parametrize("service", [*PORTAL_SERVICES, "migrate"])
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


def test_the_portal_trusts_exactly_the_one_proxy_in_front_of_it():
    for service in (*PORTAL_SERVICES, "migrate"):
        assert SERVICES[service]["environment"]["TRUSTED_PROXY_COUNT"] == "1"  # fixed, not from the environment
    assert [name for name in SERVICES if "ports" in SERVICES[name]] == ["proxy"]
    template = PROXY_TEMPLATE.read_text()
    assert "proxy_pass $portal;" in template and "set $portal http://web:8000;" in template


def test_the_public_addresses_agree_with_the_proxy():
    environment = {"PUBLIC_HOST": "portal.example", "BANK_PUBLIC_PORT": "9443"}
    portal = {k: interpolate(v, {**environment, **SECRETS}) for k, v in SERVICES["web"]["environment"].items()}
    bank = {k: interpolate(v, {**environment, **SECRETS}) for k, v in SERVICES["bank"]["environment"].items()}
    assert portal["PORTAL_BASE_URL"] == "https://portal.example"
    assert portal["ALLOWED_HOSTS"] == "portal.example"
    assert portal["BANK_BASE_URL"] == "https://bank:8001"  # the API, on the compose network
    # The SCA redirect: the proxy's bank port, on the public host; the bank answers to that host name.
    assert bank["BANK_SIM_PUBLIC_URL"] == "https://portal.example:9443"
    assert portal["BANK_SCA_URL"] == bank["BANK_SIM_PUBLIC_URL"]  # the portal's forms may lead there (CSP)
    assert "portal.example" in bank["BANK_SIM_ALLOWED_HOSTS"].split(",")
    proxy = {k: interpolate(v, environment) for k, v in SERVICES["proxy"]["environment"].items()}
    assert proxy == environment
    assert "9443:9443" in [interpolate(port, environment) for port in SERVICES["proxy"]["ports"]]
    template = PROXY_TEMPLATE.read_text()
    assert "listen ${BANK_PUBLIC_PORT} ssl" in template
    assert re.search(
        r"location = /sca/authorize \{\s*set \$bank https://bank:8001;\s*proxy_pass \$bank;", template
    )


def test_the_bank_signs_its_responses_and_the_portal_verifies_them():
    for name in ("bank", "bank-migrate"):
        environment = SERVICES[name]["environment"]
        assert environment["BANK_SIM_SIGN_RESPONSES"] == "true"
        assert environment["BANK_SIM_SIGNING_CERT"] == "/run/pki/bank-signing.pem"
        assert environment["BANK_SIM_SIGNING_KEY"] == "/run/pki/bank-signing.key"
    for name in (*PORTAL_SERVICES, "migrate"):
        assert SERVICES[name]["environment"]["BANK_RESPONSE_CERT"] == "/run/pki/bank-signing.pem"
    assert "--certfile /run/pki/bank-tls.pem --keyfile /run/pki/bank-tls.key" in command("bank")


@pytest.mark.parametrize("service", ["bank", "bank-migrate"])
def test_the_sandbox_bank_services_set_only_variables_the_simulator_reads(service):
    environment = SERVICES[service]["environment"]
    unknown = set(environment) - simulator_variables()
    assert not unknown, f"{service} sets variables the simulator never reads: {sorted(unknown)}"
    assert environment["BANK_SIM_DATABASE_URL"].endswith("@db:5432/tpp_bank")
    assert environment["BANK_SIM_ENV"] == "production"


def test_certificate_paths_point_into_the_mounted_pki_folder():
    for service in (*PORTAL_SERVICES, *ONE_OFF, "bank"):
        assert "./pki:/run/pki:ro" in SERVICES[service]["volumes"]
    for service in (*PORTAL_SERVICES, "migrate"):
        for name in ("BANK_SIGNING_CERT", "BANK_SIGNING_KEY", "BANK_CA_BUNDLE", "BANK_RESPONSE_CERT"):
            assert SERVICES[service]["environment"][name].startswith("/run/pki/")
    proxy_volumes = SERVICES["proxy"]["volumes"]
    assert "./proxy/default.conf.template:/etc/nginx/templates/default.conf.template:ro" in proxy_volumes
    assert "./tls:/etc/nginx/tls:ro" in proxy_volumes and "./pki/ca.pem:/run/pki/ca.pem:ro" in proxy_volumes


SECRETS = {
    name: "x"
    for name in (
        "SECRET_KEY",
        "FIELD_ENCRYPTION_KEYS",
        "FIELD_HASH_KEY",
        "EMAIL_URL",
        "POSTGRES_PASSWORD",
        "BANK_SIM_SECRET_KEY",
    )
}


def test_no_secret_is_written_into_the_compose_file():
    for service in SERVICES.values():
        for name, value in (service.get("environment") or {}).items():
            if any(word in name for word in ("SECRET", "PASSWORD", "KEYS", "HASH_KEY", "EMAIL_URL")):
                assert str(value).startswith("${"), f"{name} must come from the environment"
    with pytest.raises(AssertionError, match="SECRET_KEY must be set"):
        interpolate(SERVICES["web"]["environment"]["SECRET_KEY"], {})


def test_dockerfile_runs_as_non_root_with_gunicorn_from_the_runtime_lock_file():
    dockerfile = (ROOT / "docker/Dockerfile").read_text()
    assert re.search(r"^USER tpp$", dockerfile, re.M)
    assert re.search(r"^COPY requirements\.lock \./$", dockerfile, re.M)
    assert "--require-hashes -r requirements.lock" in dockerfile
    instructions = [line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in instructions if "requirements-dev.lock" in line or "--extra" in line]
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


def test_the_metrics_service_is_reachable_on_the_compose_network_only():
    """The metrics address has no authentication: it must never be published nor routed by the public proxy."""
    metrics = SERVICES["metrics"]
    assert command("metrics") == "python manage.py serve_metrics"
    assert metrics["environment"]["METRICS_BIND"] == "0.0.0.0:9100"  # inside the container, on the compose network
    assert "ports" not in metrics and "expose" not in metrics
    template = PROXY_TEMPLATE.read_text()
    assert "metrics" not in template and "9100" not in template, "the proxy must not route to the metrics service"
    # The settings' own default, for `make run` and a bare `manage.py serve_metrics`, is loopback.
    assert portal_settings.env.variables["METRICS_BIND"].startswith("127.0.0.1:")


def test_every_process_that_counts_metrics_shares_the_metrics_folder():
    folder = SERVICES["web"]["environment"]["METRICS_DIR"]
    for name in PORTAL_SERVICES:
        assert SERVICES[name]["environment"]["METRICS_DIR"] == folder, name
        assert f"metrics:{folder}" in SERVICES[name]["volumes"], f"{name} does not mount the metrics volume"
        assert "./pki:/run/pki:ro" in SERVICES[name]["volumes"], name
    volume = COMPOSE["volumes"]["metrics"]["driver_opts"]
    assert volume["type"] == "tmpfs" and "uid=10001" in volume["o"]  # the image's user writes there


def test_traces_and_error_reports_are_off_unless_the_environment_sets_them():
    environment = {k: interpolate(v, SECRETS) for k, v in SERVICES["web"]["environment"].items()}
    assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == ""
    assert environment["SENTRY_DSN"] == ""
    names = {SERVICES[name]["environment"]["OTEL_SERVICE_NAME"] for name in PORTAL_SERVICES}
    assert len(names) == len(PORTAL_SERVICES)  # each process kind is told apart in the traces
