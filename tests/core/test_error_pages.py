"""The portal's own error pages (404, 403, 400, 500) in both languages, also under `make run`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.template.loader import render_to_string
from django.test import Client
from django.urls import path
from django.utils import translation

from devtools.livebank import NotReady, free_port, wait_for_ok

ROOT = Path(__file__).resolve().parents[2]
TECHNICAL_404 = "Django tried these URL patterns"


def forbidden(request):
    raise PermissionDenied


def bad(request):
    raise SuspiciousOperation("a test")


def broken(request):
    raise RuntimeError("a test")


urlpatterns = [
    *__import__("tpp_portal.urls", fromlist=["urlpatterns"]).urlpatterns,
    path("test-403/", forbidden),
    path("test-400/", bad),
    path("test-500/", broken),
]


@pytest.fixture
def error_urls(settings):
    settings.ROOT_URLCONF = __name__
    yield
    translation.activate(settings.LANGUAGE_CODE)  # the middleware left the last request's language active


PAGES = {
    "en": {
        "/no-such-page/": (404, "Page not found", "Go to the start page"),
        "/test-403/": (403, "You cannot open this page", "Go to the start page"),
        "/test-400/": (400, "Something was wrong with the request", "Go to the start page"),
        "/test-500/": (500, "Something went wrong on our side", "Go to the start page"),
    },
    "nb": {
        "/no-such-page/": (404, "Fant ikke siden", "Gå til startsiden"),
        "/test-403/": (403, "Du kan ikke åpne denne siden", "Gå til startsiden"),
        "/test-400/": (400, "Noe var galt med forespørselen", "Gå til startsiden"),
        "/test-500/": (500, "Noe gikk galt hos oss", "Gå til startsiden"),
    },
}


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "nb"])
def test_each_error_has_our_page_in_the_users_language_with_a_way_home(error_urls, language):
    client = Client(raise_request_exception=False, HTTP_ACCEPT_LANGUAGE=language)
    for url, (status, heading, home) in PAGES[language].items():
        response = client.get(url)
        assert response.status_code == status, url
        html = response.content.decode()
        assert f"<h1>{heading}</h1>" in html, (url, html)
        assert re.search(rf'<a href="/">{home}</a>', html), (url, html)
        assert f'<html lang="{language}">' in html
        assert 'href="/static/css/portal.css"' in html
        assert "Traceback" not in html and TECHNICAL_404 not in html


def test_the_500_page_is_drawn_without_a_request_or_a_database():
    # As Django draws it (django.views.defaults.server_error): no request, no context processors.
    with translation.override("nb"):
        html = render_to_string("500.html")
    assert "<h1>Noe gikk galt hos oss</h1>" in html and 'href="/"' in html


def test_make_runs_web_process_shows_our_404_and_still_serves_static_files(tmp_path):
    """The Procfile's web command with the environment `make run` gives it (no DEBUG set)."""
    web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DEBUG", "BANK_", "PORTAL_", "DATABASE_URL", "REDIS_URL", "VAR_DIR"))
    }
    env.update(  # the Makefile's: VAR_DIR=var (its development certificates, made by `make test` first)
        VAR_DIR="var",
        PORTAL_PORT=str(port),
        PORTAL_BASE_URL=f"http://127.0.0.1:{port}",
        BANK_BASE_URL="http://127.0.0.1:9",
    )
    log = tmp_path / "web.log"
    with log.open("w") as output:
        process = subprocess.Popen(  # noqa: S602 - the Procfile's own command line, as honcho runs it
            web.removeprefix("web:").strip(),
            shell=True,
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for_ok(f"{base}/static/css/portal.css", process=process, deadline=time.monotonic() + 90)
        except NotReady as exc:
            raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
        response = requests.get(f"{base}/no-such-page/", timeout=10, headers={"Accept-Language": "nb"})
        assert response.status_code == 404
        assert TECHNICAL_404 not in response.text and "URLconf" not in response.text
        assert "<h1>Fant ikke siden</h1>" in response.text
        stylesheet = requests.get(f"{base}/static/css/portal.css", timeout=10)
        assert stylesheet.status_code == 200 and ".error-summary" in stylesheet.text
        assert requests.get(f"{base}/static/js/error-summary.js", timeout=10).status_code == 200
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
