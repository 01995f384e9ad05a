"""Oversized and malformed input on every page and every form: 1 MB fields, NUL bytes, invalid UTF-8 in the
query string and the body, too many fields, a body over the upload limit. The answer is always a 4xx or the
form again with its error, never a 500, and nothing is half-written.

The forms are not listed by hand: each page found by walking the URL resolver is fetched, and every field of
every <form method="post"> on it is filled with the bad value in turn.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.conf import settings as django_settings

from tests.security.conftest import body, server_error, signed_in
from tests.security.pages import Page, pages

pytestmark = pytest.mark.django_db

MEGABYTE = "A" * 1_000_000
BAD_VALUES = {"1 MB": MEGABYTE, "NUL": "ab\x00cd", "controls": "a\u202eb\r\nc\x1b\ud800"[:-1] + "\ufffe"}
BAD_QUERIES = [
    "next=%ff%fe&q=%c3%28",  # invalid UTF-8
    "next=%00&q=a%00b&page=%00",  # NUL bytes
    "page=-1&page=99999999999999999999999&sort=%27%22%3C",
    "q=" + "A" * 20_000,  # a long query string (a real server caps the request line; Django must not fail)
]


class FormFields(HTMLParser):
    """The field names of every POST form of a page, with the form's action."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[tuple[str, dict[str, str]]] = []
        self._current: dict[str, str] | None = None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "form" and (values.get("method") or "get").lower() == "post":
            self._current = {}
            self.forms.append((values.get("action") or "", self._current))
        elif tag in {"input", "select", "textarea", "button"} and self._current is not None and values.get("name"):
            self._current.setdefault(values["name"], values.get("value") or "")

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def forms_of(client, page: Page) -> list[tuple[str, dict[str, str]]]:
    response = client.get(page.url)
    if response.status_code != 200 or not response.get("Content-Type", "").startswith("text/html"):
        return []
    parser = FormFields()
    parser.feed(body(response))
    return [(action or page.url, fields) for action, fields in parser.forms if action.startswith(("/", ""))]


def _users(world, who):
    return None if who == "anonymous" else getattr(world, who)


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_malformed_query_strings_never_cause_a_server_error(world, who):
    failures = {}
    for page in pages(world):
        if page.route.is_admin:
            continue
        for query in BAD_QUERIES:
            client = signed_in(_users(world, who))
            for method in ("get", "post"):
                response = getattr(client, method)(f"{page.url}?{query}")
                if server_error(response.status_code):
                    failures[f"{method.upper()} {page.url}?{query[:40]}"] = response.status_code
    assert failures == {}


@pytest.mark.parametrize("who", ["anonymous", "owner", "superuser"])
def test_every_form_field_survives_oversized_and_malformed_values(world, who):
    user = _users(world, who)
    walked = [page for page in pages(world) if page.route.is_admin == (who == "superuser")]
    if who == "superuser":
        # The admin's add forms: one per model is enough to cover its widgets.
        walked = [page for page in walked if page.route.name.endswith("_add")]
    failures = {}
    forms_seen = 0
    for page in walked:
        for action, fields in forms_of(signed_in(user), page):
            forms_seen += 1
            names = [name for name in fields if name != "csrfmiddlewaretoken"]
            # Every field at once with each bad value (Django validates every field of a form whichever fails),
            # then each field alone with 1 MB, the others as the page filled them.
            attempts = [(label, {**fields, **dict.fromkeys(names, value)}) for label, value in BAD_VALUES.items()]
            attempts += [(f"{name}=1 MB", {**fields, name: MEGABYTE}) for name in names]
            for label, data in attempts:
                client = signed_in(user)  # fresh each time: a successful POST may sign out
                response = client.post(action, data)
                if server_error(response.status_code):
                    failures[f"{action} {label}"] = response.status_code
    assert failures == {}
    assert forms_seen >= (4 if who == "anonymous" else 2), "the walk found (almost) no forms"


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_invalid_utf8_bodies_too_many_fields_and_oversized_bodies_are_4xx(world, who):
    user = _users(world, who)
    limit = django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    failures = {}
    for page in pages(world):
        if page.route.is_admin:
            continue
        client = signed_in(user)
        bodies = {
            "invalid UTF-8": b"username=%ff%fe&password=%c3%28&email=%80&next=%ff",
            "too many fields": "&".join(f"f{i}=x" for i in range(2000)).encode(),
            "over the upload limit": b"q=" + b"A" * (limit + 1),
        }
        for label, payload in bodies.items():
            response = client.generic("POST", page.url, payload, content_type="application/x-www-form-urlencoded")
            # A page that reads the body refuses the last two with 400 (Django's TooManyFieldsSent and
            # RequestDataTooBig); one that does not read it may answer as it likes, but never with a 5xx.
            if server_error(response.status_code):
                failures[f"POST {page.url} {label}"] = response.status_code
            if label != "invalid UTF-8" and page.url.startswith("/auth/sign-in/") and response.status_code != 400:
                failures[f"POST {page.url} {label}: expected 400"] = response.status_code
    assert failures == {}
