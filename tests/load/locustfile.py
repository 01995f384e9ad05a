"""Locust users of the portal (run by bench/load.py, headless, against a portal on loopback only).

Each simulated user signs in with one of the accounts in ``LOAD_USERS`` (comma-separated usernames, password
``LOAD_PASSWORD``), then browses its accounts and the start page and now and then submits a payment through the
real pages: the form, the review (with the password typed again when the portal asks for it), the one submission
(the bank is called once). Every payment has an amount of
its own (the bank refuses a logical duplicate: same debtor, creditor, amount and day).

Each simulated user is a person at an address of their own, as real users are: every request carries the
X-Forwarded-For that the deployment's proxy sets (docker/proxy: "client, proxy"), with a client address of the
benchmarking block 198.18.0.0/15 (RFC 2544; only a header value, never contacted). bench/load.py runs the portal
with TRUSTED_PROXY_COUNT=1, so its per-address limits (the sign-in's, core.clientip) see 20 people, not one
address sending everything; a portal that trusts no proxy ignores the header.
"""

from __future__ import annotations

import itertools
import os
import re

from locust import HttpUser, between, task

_USERS = [name for name in os.environ.get("LOAD_USERS", "").split(",") if name]
_PASSWORD = os.environ.get("LOAD_PASSWORD", "")
_next_user = itertools.count()
_next_amount = itertools.count(1)


def client_address(number: int) -> str:
    """The address of the ``number``-th simulated user (0, 1, ...): 198.18.0.1, 198.18.0.2 ... (RFC 2544)."""
    return f"198.18.{number // 254 % 256}.{number % 254 + 1}"


def _csrf(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    return match.group(1) if match else ""


class PortalUser(HttpUser):
    wait_time = between(0.2, 1.0)

    def on_start(self) -> None:
        if not _USERS:
            raise RuntimeError("LOAD_USERS is empty")
        number = next(_next_user)
        self.username = _USERS[number % len(_USERS)]
        self.client.headers["X-Forwarded-For"] = f"{client_address(number)}, 127.0.0.1"
        page = self.client.get("/auth/sign-in/", name="sign-in")
        self.client.post(
            "/auth/sign-in/",
            data={"csrfmiddlewaretoken": _csrf(page.text), "login": self.username, "password": _PASSWORD},
            headers={"Referer": f"{self.host}/auth/sign-in/"},
            name="sign-in",
        )

    @task(5)
    def accounts(self) -> None:
        with self.client.get("/bank/accounts/", name="accounts", catch_response=True) as response:
            if response.status_code != 200 or "/auth/sign-in/" in response.url:
                response.failure(f"accounts page: {response.status_code} {response.url}")

    @task(2)
    def home(self) -> None:
        self.client.get("/", name="home")

    @task(1)
    def pay(self) -> None:
        with self.client.get("/payments/new/", name="payment form", catch_response=True) as form:
            debtor = re.search(r'name="debtor_account"[^>]*>.*?<option value="([^"]+)"', form.text, re.S)
            if debtor is None:
                form.failure(f"payment form: no debtor account offered ({form.status_code})")
                return
        number = next(_next_amount)
        with self.client.post(
            "/payments/new/",
            data={
                "csrfmiddlewaretoken": _csrf(form.text),
                "debtor_account": debtor.group(1),
                "amount": f"{10 + number}.{number % 100:02d}",
                "currency": "NOK",
                "creditor_name": "Müller Maschinenbau GmbH",
                "creditor_account": "DE89370400440532013000",
                "creditor_account_currency": "EUR",
                "creditor_agent": "COBADEFFXXX",
                "creditor_city": "Berlin",
                "creditor_country": "DE",
                "remittance_information": f"load test {self.username} {number}",
            },
            headers={"Referer": f"{self.host}/payments/new/"},
            name="payment form",
            allow_redirects=False,
            catch_response=True,
        ) as draft:
            if draft.status_code != 302:
                draft.failure(f"payment form: {draft.status_code} {_errors(draft.text)}")
                return
        review_url = draft.headers["Location"]
        with self.client.get(review_url, name="payment review", catch_response=True) as shown:
            review = shown
            if "/auth/confirm-password/" in shown.url:
                # Every payment after the first asks for the password again (users.security): typed, as a
                # user would, and the portal returns to the review.
                review = self.client.post(
                    shown.url,
                    data={"csrfmiddlewaretoken": _csrf(shown.text), "password": _PASSWORD},
                    headers={"Referer": shown.url},
                    name="password again",
                )
            key = re.search(r'name="idempotency_key" value="([^"]+)"', review.text)
            if key is None:
                shown.failure(f"payment review: no submit form ({review.status_code} {review.url})")
                return
        with self.client.post(
            review_url,
            data={"csrfmiddlewaretoken": _csrf(review.text), "idempotency_key": key.group(1)},
            headers={"Referer": f"{self.host}{review_url}"},
            name="payment submit",
            allow_redirects=False,
            catch_response=True,
        ) as submitted:
            if submitted.status_code != 302:
                submitted.failure(f"payment submit: {submitted.status_code} {_errors(submitted.text)}")


def _errors(html: str) -> str:
    return " | ".join(re.findall(r'class="[^"]*error[^"]*"[^>]*>([^<]{1,200})<', html))[:500]
