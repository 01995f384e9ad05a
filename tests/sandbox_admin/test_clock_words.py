"""The clock page's words, with the bank's clock read stubbed: how far ahead the bank's clock is (in hours and
minutes, not seconds), every batch time the bank has, and the next batch by the bank's clock."""

from __future__ import annotations

import datetime as dt
import html

import pytest
from django.urls import reverse
from django.utils import translation

from sandbox_admin import views
from xs2a.models import SandboxClock

CLOCK = reverse("sandbox_admin:clock")
SANDBOX_BATCHES = tuple(dt.time(h, 0) for h in (5, 8, 11, 13, 15))  # the sandbox bank's (BANK_SIM_BATCH_TIMES)


@pytest.fixture
def bank_clock(monkeypatch, settings):
    settings.BANK_IS_SANDBOX = True
    settings.BANK_BATCH_TIMES = SANDBOX_BATCHES

    def at(now: dt.datetime, offset_seconds: int) -> None:
        clock = SandboxClock(now=now, offset_seconds=offset_seconds)
        monkeypatch.setattr(views.selectors, "sandbox_clock_read", lambda *, actor: clock)

    return at


def _main(response) -> str:
    """The page's text about the clock (its card), whitespace collapsed."""
    page = response.content.decode()
    return html.unescape(
        " ".join(page.split('<section class="card narrow sandbox-clock"', 1)[1].split("</section>", 1)[0].split())
    )


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (48943, "13 hours 35 minutes"),
        (3600, "1 hour"),
        (60, "1 minute"),
        (20, "less than a minute"),
        (90000, "1 day 1 hour"),
        (2 * 86400 + 7260, "2 days 2 hours 1 minute"),
    ],
)
def test_the_offset_reads_in_days_hours_and_minutes(seconds, words):
    assert views.offset_words(seconds) == words


def test_the_page_lists_every_batch_and_names_the_next_by_the_bank_clock(charlie_client, bank_clock):
    bank_clock(dt.datetime(2026, 12, 7, 13, 35, tzinfo=dt.UTC), 48943)

    main = _main(charlie_client.get(CLOCK))

    assert "(13 hours 35 minutes ahead of the real clock)" in main
    assert "seconds" not in main
    assert "The bank runs its payment batches at 05:00, 08:00, 11:00, 13:00, 15:00 UTC on its own clock" in main
    assert "The next batch is at 15:00 UTC today by the bank's clock." in main


def test_after_the_last_batch_the_next_is_tomorrow_in_bokmal(charlie_client, bank_clock):
    bank_clock(dt.datetime(2026, 12, 7, 16, 0, tzinfo=dt.UTC), 3600)

    with translation.override("nb"):
        charlie_client.cookies["django_language"] = "nb"
        main = _main(charlie_client.get(CLOCK, HTTP_ACCEPT_LANGUAGE="nb"))

    assert "(1 time foran den virkelige klokken)" in main
    assert "Banken kjører betalingsbuntene kl. 05:00, 08:00, 11:00, 13:00, 15:00 UTC" in main
    assert "Neste bunt kjøres kl. 05:00 UTC i morgen etter bankens klokke." in main


def test_without_known_batch_times_no_next_batch_is_named(charlie_client, bank_clock, settings):
    bank_clock(dt.datetime(2026, 12, 7, 16, 0, tzinfo=dt.UTC), 0)
    settings.BANK_BATCH_TIMES = ()

    main = _main(charlie_client.get(CLOCK))

    assert "(the real time)" in main
    assert "at the times of its own schedule" in main and "The next batch" not in main
