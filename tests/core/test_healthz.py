"""/healthz reports the database and the broker, and answers probes that are not one of ALLOWED_HOSTS."""

import pytest

from core import health


@pytest.mark.django_db
def test_healthz_is_200_when_database_and_broker_answer(client):
    response = client.get("/healthz", HTTP_HOST="10.0.0.7:8000")  # a probe's address, not an allowed host
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}
    assert response["Cache-Control"].startswith("max-age=0")


@pytest.mark.django_db
def test_healthz_is_503_naming_the_failing_check(client, monkeypatch):
    monkeypatch.setattr(health, "check_broker", lambda: "OperationalError: connection refused")
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"] == {"database": "ok", "broker": "unavailable"}
    assert "connection refused" not in response.content.decode()  # details are logged, never sent


def test_broker_check_reports_an_unreachable_broker(settings):
    from tpp_portal.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        error = health.check_broker(timeout=1)
    finally:
        app.conf.broker_url = original
    assert error is not None and "Error" in error


@pytest.mark.django_db
def test_every_response_carries_a_request_id(client):
    response = client.get("/", HTTP_X_REQUEST_ID="proxy-1234-abcd")
    assert response["X-Request-ID"] == "proxy-1234-abcd"
    forged = client.get("/", HTTP_X_REQUEST_ID="<script>alert(1)</script>")
    assert forged["X-Request-ID"] != "<script>alert(1)</script>"
    assert len(forged["X-Request-ID"]) == 36
