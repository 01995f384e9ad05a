"""Addresses: building paths from templates and resolving the bank's ``_links`` against the base address.

The base address may carry a path prefix (``https://bank.example/api``). Banks write their links two ways: below
the base address (``/v1/accounts/...`` means ``https://bank.example/api/v1/accounts/...``), or from the host root
with the prefix already in (``/api/v1/accounts/...``); :meth:`BaseUrl.resolve` follows both to the same address
(docs/bank-interface.md, "Addresses and environments"). Resource ids are opaque and may contain ``!`` and ``=``;
they are quoted as one path segment.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, urlencode, urlsplit, urlunsplit

from xs2a.errors import ConfigurationError, InvalidRequestError, LinkError

__all__ = ["BaseUrl", "path_from_template", "quote_id", "template_for"]

# RFC 3986 path-segment characters kept as they are ('!' and '=' among them); everything else is %-encoded,
# '/' included, so an id is always exactly one segment. The sandbox bank quotes ids the same way.
_SEGMENT_SAFE = "!=-_.~"


def quote_id(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequestError("a resource id must be a non-empty string")
    return quote(value, safe=_SEGMENT_SAFE)


def path_from_template(template: str, **params: str) -> str:
    """``/v1/accounts/{account_id}/balances`` with each ``{name}`` replaced by the quoted id."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in params:
            raise InvalidRequestError(f"{template}: no value for {{{name}}}")
        return quote_id(params[name])

    return re.sub(r"\{(\w+)\}", fill, template)


class BaseUrl:
    """The bank's base address: scheme, host, port and an optional path prefix."""

    def __init__(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            hostname = parts.hostname
        except (TypeError, ValueError, AttributeError):
            raise ConfigurationError(f"the bank's base address is not a URL: {url!r}") from None
        if parts.scheme not in {"http", "https"} or not hostname:
            raise ConfigurationError(f"the bank's base address must be an absolute http(s) URL, got {url!r}")
        if parts.query or parts.fragment:
            raise ConfigurationError("the bank's base address must not carry a query or a fragment")
        self.scheme = parts.scheme
        self.netloc = parts.netloc
        self.prefix = parts.path.rstrip("/")

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.netloc}"

    def __str__(self) -> str:
        return self.origin + self.prefix

    def url(self, path: str, query: dict[str, str] | None = None) -> str:
        """The absolute address of an API path (``/v1/...``), with an encoded query."""
        if not path.startswith("/"):
            raise InvalidRequestError(f"an API path starts with '/', got {path!r}")
        url = self.origin + self.prefix + path
        if query:
            url += ("&" if "?" in path else "?") + urlencode(query)
        return url

    def resolve(self, href: str) -> str:
        """A ``_links`` href as an absolute address. With the base ``https://bank.example/psd2``:

        - ``/psd2/v1/payments/x/status``, a path that already starts with the prefix (a whole segment): followed
          as it is (never ``/psd2/psd2/...``);
        - ``/v1/payments/x/status``, a path of the API relative to the base address: below the prefix,
          ``/psd2/v1/payments/x/status``;
        - ``https://bank.example/<any path>``: followed as it is when scheme, host and port are the bank's; a
          link to any other address is refused: the client never sends a signed request elsewhere;
        - any other path (``/other/...``, or ``v1/...`` without the leading slash) is refused. Such a link is
          ambiguous: it may mean the host root (a service of the host that is not the bank's API under this base
          address) or a path below the prefix that is not the API's (``/psd2/other/...``); following either
          guess could send the PSU's signed request to the wrong resource. An absolute link says which it means,
          and is followed.

        Without a prefix every path that starts with ``/`` is below the base address and is followed. A path with
        a dot segment (``.`` or ``..``, also %-encoded) is refused in every form: it would be folded away before
        sending and could leave the prefix. Raises LinkError otherwise (no href, control characters, not a URL,
        another address, an ambiguous path).
        """
        if not isinstance(href, str) or not href.strip():
            raise LinkError("a link without an href")
        if not href.isprintable():
            raise LinkError(f"the link {href!r} holds control characters")
        try:
            parts = urlsplit(href)
        except ValueError:
            raise LinkError(f"the link {href!r} is not a URL") from None
        path = parts.path
        if any(unquote(segment) in {".", ".."} for segment in path.split("/")):
            raise LinkError(f"the link {href!r} holds a dot segment ('.' or '..'): where it leads is not plain")
        if parts.scheme or parts.netloc:
            if parts.scheme != self.scheme or parts.netloc.lower() != self.netloc.lower():
                raise LinkError(f"the link {href!r} does not point at the bank ({self.origin})")
            return urlunsplit((self.scheme, self.netloc, path, parts.query, ""))
        if not path.startswith("/"):
            raise LinkError(f"the link {href!r} is neither absolute nor relative to the base address (/v1/...)")
        if self.prefix and (path == self.prefix or path.startswith(self.prefix + "/")):
            return urlunsplit((self.scheme, self.netloc, path, parts.query, ""))
        if self.prefix and not (path == "/v1" or path.startswith("/v1/")):
            raise LinkError(
                f"the link {href!r} is neither below the base address's path ({self.prefix}) nor an API path "
                "(/v1/...): which one it means is not known"
            )
        return urlunsplit((self.scheme, self.netloc, self.prefix + path, parts.query, ""))

    def api_path(self, url: str) -> str:
        """The path of an absolute address below the prefix (``/v1/...``), for naming the endpoint."""
        path = urlsplit(url).path
        if self.prefix and path.startswith(self.prefix + "/"):
            return path[len(self.prefix) :]
        return path


# Path templates of the operations, for the audit trail (ids are not recorded, only which endpoint).
TEMPLATES = (
    "/v1/payments/{product}",
    "/v1/payments/{product}/{payment_id}",
    "/v1/payments/{product}/{payment_id}/status",
    "/v1/payments/{product}/{payment_id}/authorisations",
    "/v1/payments/{product}/{payment_id}/authorisations/{authorisation_id}",
    "/v1/accounts",
    "/v1/accounts/{account_id}",
    "/v1/accounts/{account_id}/balances",
    "/v1/accounts/{account_id}/transactions",
    "/v1/accounts/{account_id}/transactions/{transaction_id}",
    "/v1/card-accounts",
    "/v1/card-accounts/{account_id}",
    "/v1/card-accounts/{account_id}/balances",
    "/v1/card-accounts/{account_id}/transactions",
    "/v1/users",
    "/v1/agreements",
    "/v1/consents",
    "/v1/bank-offered-consents",
    "/v1/sandbox/initialize",
    "/v1/sandbox/customers",
    "/v1/sandbox/customers/{customer_id}",
    "/v1/sandbox/agreements",
    "/v1/sandbox/agreements/{agreement_id}/engagements",
    "/v1/sandbox/accounts",
    "/v1/sandbox/accounts/{account_id}/transactions",
    "/v1/sandbox/accounts/{account_id}/balances",
    "/v1/sandbox/card-accounts/{account_id}/balances",
    "/v1/sandbox/clock",
    "/v1/sandbox/batches/run",
)
_LITERAL_SEGMENTS = {"status", "authorisations", "balances", "transactions", "engagements"}


def _compile(template: str) -> re.Pattern[str]:
    pattern = re.escape(template)
    pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", pattern)
    return re.compile(f"^{pattern}$")


_COMPILED = [(t, _compile(t)) for t in TEMPLATES]


def template_for(path: str) -> str:
    """The template a path (``/v1/...``, no query) matches; the most literal match wins.

    A path that matches none is recorded with every segment after ``/v1/<word>`` replaced by ``{id}``, so that
    an id never reaches the audit trail.
    """
    best: tuple[int, str] | None = None
    for template, pattern in _COMPILED:
        if pattern.match(path):
            literal = sum(1 for seg in template.split("/") if seg and not seg.startswith("{"))
            if best is None or literal > best[0]:
                best = (literal, template)
    if best:
        return best[1]
    segments = path.split("/")
    kept = [
        seg if i <= 2 or seg in _LITERAL_SEGMENTS or seg == "sandbox" else "{id}" for i, seg in enumerate(segments)
    ]
    return "/".join(kept)
