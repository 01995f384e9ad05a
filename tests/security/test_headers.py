"""Security headers on every page of the portal, found by walking the URL resolver (tests/security/pages.py):
anonymous, signed in as a customer and as the admin's superuser; and HSTS with the production settings.

Every answer carries a Content-Security-Policy without 'unsafe-inline' or 'unsafe-eval' scripts that forbids
framing, plugins and <base>, X-Frame-Options DENY, nosniff, a same-origin Referrer-Policy and opener policy.
Every HTML page also keeps to that policy in its markup: no inline script or style, no event-handler
attributes, no javascript: addresses, nothing loaded from another host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.security.conftest import body, server_error, signed_in
from tests.security.pages import UNNAMED_ROUTES, pages, routes, unnamed_key

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SCRIPT_DATA_TYPES = {"application/json", "application/ld+json"}  # json_script: data, never run


def parse_csp(header: str) -> dict[str, list[str]]:
    policy = {}
    for directive in filter(None, (part.strip() for part in header.split(";"))):
        name, *values = directive.split()
        policy[name.lower()] = values
    return policy


def header_problems(response) -> list[str]:
    problems = []
    csp = response.headers.get("Content-Security-Policy")
    if not csp:
        return ["no Content-Security-Policy"]
    policy = parse_csp(csp)
    scripts = policy.get("script-src", policy.get("default-src"))
    if not scripts:
        problems.append("CSP without script-src or default-src")
    elif {"'unsafe-inline'", "'unsafe-eval'", "*", "data:", "http:", "https:"} & set(scripts):
        problems.append(f"CSP script-src too wide: {scripts}")
    for directive, expected in (
        ("frame-ancestors", ["'none'"]),
        ("object-src", ["'none'"]),
        ("base-uri", ["'none'"]),
    ):
        if policy.get(directive) != expected:
            problems.append(f"CSP {directive} is {policy.get(directive)}, expected {expected}")
    if "'unsafe-inline'" in policy.get("style-src", policy.get("default-src", [])):
        problems.append("CSP allows inline styles")
    expected_headers = {
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
    for name, value in expected_headers.items():
        if response.headers.get(name) != value:
            problems.append(f"{name} is {response.headers.get(name)!r}, expected {value!r}")
    return problems


class MarkupAudit(HTMLParser):
    """What in an HTML page would break (or need to weaken) the CSP."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._inline_script = False

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...> event-handler attribute")
            if name == "style":
                self.problems.append(f"<{tag} style=...> inline style")
            if name in {"href", "src", "action", "formaction"} and value:
                if value.strip().lower().startswith("javascript:"):
                    self.problems.append(f"<{tag} {name}={value!r}> javascript: address")
                if tag in {"script", "link", "img", "iframe"} and value.startswith(("http:", "https:", "//")):
                    self.problems.append(f"<{tag} {name}={value!r}> loaded from another host")
        if tag == "style":
            self.problems.append("<style> element")
        if tag == "script" and not values.get("src") and values.get("type") not in SCRIPT_DATA_TYPES:
            self._inline_script = True

    def handle_data(self, data):
        if self._inline_script and data.strip():
            self.problems.append(f"inline <script>: {data.strip()[:80]!r}")

    def handle_endtag(self, tag):
        if tag == "script":
            self._inline_script = False


def markup_problems(response) -> list[str]:
    if response.status_code != 200 or not response.get("Content-Type", "").startswith("text/html"):
        return []
    audit = MarkupAudit()
    audit.feed(body(response))
    return audit.problems


def test_every_page_is_reachable_by_the_walk(world):
    # pages() raises, naming the URL, for a URL with parameters that tests/security/pages.py cannot fill.
    found = pages(world)
    names = {page.route.name for page in found}
    for route in routes():
        assert route.name in names or unnamed_key(route) in UNNAMED_ROUTES or route.name == "admin:view_on_site"
    # The walk is not empty and reaches both the customer's pages and the admin.
    assert {"home", "login", "bank-disconnect", "admin:index"} <= names


@pytest.mark.parametrize("who", ["anonymous", "owner", "superuser"])
def test_every_page_sends_the_security_headers_and_keeps_to_the_csp(world, who):
    client = signed_in(None if who == "anonymous" else getattr(world, who))
    problems = {}
    statuses = {}
    for page in pages(world):
        response = client.get(page.url)
        statuses[page.url] = response.status_code
        found = markup_problems(response) + header_problems(response)
        if server_error(response.status_code):
            found.append(f"status {response.status_code}")
        if found:
            problems[page.url] = found
    assert problems == {}
    # Not a walk of redirects only: the signed-in user sees real pages.
    assert sum(status == 200 for status in statuses.values()) >= (3 if who == "anonymous" else 8), statuses
    assert statuses.get("/healthz") == 200, "the walk covers the health probe (answered before the middleware)"


def test_the_health_probe_carries_the_headers_from_any_host():
    # /healthz answers before host validation (a probe uses the pod's address): its headers are added there.
    from django.test import Client

    response = Client().get("/healthz", HTTP_HOST="10.0.0.7:8000")
    assert response.status_code == 200
    assert header_problems(response) == []


PRODUCTION_PROBE = """
import json, django
from django.core.management import call_command
django.setup()
call_command("migrate", verbosity=0, interactive=False)
call_command("collectstatic", verbosity=0, interactive=False)
from django.test import Client
client = Client()
answers = {}
for path in ("/", "/auth/sign-in/", "/auth/sign-up/", "/healthz"):
    secure = client.get(path, secure=True)
    plain = client.get(path, secure=False)
    answers[path] = {
        "status": secure.status_code,
        "hsts": secure.headers.get("Strict-Transport-Security"),
        "plain_status": plain.status_code,
        "plain_location": plain.headers.get("Location"),
        "cookies_secure": [bool(c["secure"]) for c in secure.cookies.values()],
    }
print(json.dumps(answers))
"""


def test_production_sends_hsts_and_redirects_plain_http(tmp_path):
    from tests.tpp_portal.test_settings import PRODUCTION

    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "SECRET_KEY", "DATABASE"))}
    env.update(PRODUCTION, DATABASE_URL=f"sqlite:///{tmp_path / 'portal.sqlite3'}", VAR_DIR=str(tmp_path))
    env.update(DJANGO_SETTINGS_MODULE="tpp_portal.settings", STATIC_ROOT=str(tmp_path / "static"))
    env["BANK_SIGNING_CERT"] = str(ROOT / "var/pki/tpp-qseal.pem")
    env["BANK_SIGNING_KEY"] = str(ROOT / "var/pki/tpp-qseal.key")
    env["ALLOWED_HOSTS"] = "testserver"
    result = subprocess.run(
        [sys.executable, "-c", PRODUCTION_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    for path, answer in answers.items():
        assert answer["status"] == 200, (path, answer)
        assert answer["hsts"] == "max-age=31536000; includeSubDomains; preload", (path, answer)
        assert all(answer["cookies_secure"]), (path, answer)
        if path == "/healthz":  # the probe reaches the process over plain http inside the cluster
            assert answer["plain_status"] == 200 and answer["plain_location"] is None, answer
        else:
            assert answer["plain_status"] == 301 and answer["plain_location"] == f"https://testserver{path}"
