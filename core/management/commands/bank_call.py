"""``manage.py bank_call METHOD PATH``: send one signed request to the bank and print the answer.

The operator's tool for checking connectivity, certificates and signing with a bank. It uses the configured
signing certificate and key (BANK_*), sends exactly one attempt (no retries), records the call in BankCall like
any other, and prints the request line, the X-Request-ID, the status, the response headers and the body.
It never prints the private key; the Signature and certificate it sent are shown only in redacted form.
"""

from __future__ import annotations

import json
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.bank import build_bank_client
from xs2a.client import RetryPolicy
from xs2a.errors import Xs2aError
from xs2a.psu import PsuContext

METHODS = ("GET", "POST", "PUT", "DELETE")


class Command(BaseCommand):
    help = "Send one signed request to the bank (e.g. GET /v1/sandbox/customers) and print status, headers, body."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("method", type=str.upper, choices=METHODS)
        parser.add_argument("path", help="API path below BANK_BASE_URL, e.g. /v1/accounts?withBalance=false")
        parser.add_argument("--json", dest="json_body", help="request body (JSON text)")
        parser.add_argument("--psu-id", help="PSU-ID (UUID)")
        parser.add_argument("--psu-corporate-id", help="PSU-Corporate-ID (UUID)")
        parser.add_argument("--psu-context", choices=("PRIVATE", "CORPORATE"), help="PSU-Context")
        parser.add_argument("--psu-ip", help="PSU-IP-Address: give it only when a PSU is present")
        parser.add_argument("--tpp-session-id", help="TPP-Session-ID")
        parser.add_argument("--request-id", help="X-Request-ID (default: a new UUID)")
        parser.add_argument(
            "--header", action="append", default=[], metavar="NAME:VALUE", help="extra header (repeatable)"
        )

    def handle(self, *args, **options) -> None:
        path: str = options["path"]
        if not path.startswith("/"):
            raise CommandError("PATH is an API path starting with '/', e.g. /v1/sandbox/customers")
        body = None
        if options["json_body"] is not None:
            try:
                json.loads(options["json_body"], parse_float=Decimal)
            except json.JSONDecodeError as exc:
                raise CommandError(f"--json is not valid JSON: {exc}") from None
            body = options["json_body"].encode("utf-8")  # sent (and hashed) exactly as typed
        headers = {}
        for item in options["header"]:
            name, sep, value = item.partition(":")
            if not sep or not name.strip():
                raise CommandError(f"--header {item!r}: expected NAME:VALUE")
            headers[name.strip()] = value.strip()
        try:
            psu = PsuContext(
                psu_id=options["psu_id"],
                corporate_id=options["psu_corporate_id"],
                context=options["psu_context"],
                ip_address=options["psu_ip"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None

        with build_bank_client(retry=RetryPolicy(max_attempts=1)) as client:
            try:
                response = client.request(
                    options["method"],
                    path,
                    body=body,
                    psu=psu,
                    request_id=options["request_id"],
                    tpp_session_id=options["tpp_session_id"],
                    headers=headers,
                )
            except (Xs2aError, ValueError, TypeError) as exc:
                raise CommandError(f"{type(exc).__name__}: {exc}") from None

        out = self.stdout
        out.write(f"{response.method} {response.url}")
        out.write(f"X-Request-ID: {response.request_id}")
        out.write("")
        out.write("request headers (Signature, certificate and PSU identifiers redacted):")
        for name, value in response.request_headers.items():
            out.write(f"  {name}: {value}")
        out.write("")
        out.write(f"HTTP {response.status}")
        for name, value in response.headers.items():
            out.write(f"{name}: {value}")
        out.write("")
        text = response.body.decode("utf-8", errors="replace")
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
        out.write(text)
        if response.status >= 400:
            raise CommandError(f"the bank answered HTTP {response.status}", returncode=1)
