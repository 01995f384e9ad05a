"""The HTTP session: one pooled ``requests.Session`` per client, TLS 1.2 or higher, trust limited to the bank's CA.

The SSL context carries everything (trust anchors, minimum version, QWAC client certificate) and is mounted
through an HTTPAdapter that passes no CA file of its own to urllib3, so that neither requests' bundled CAs nor
``REQUESTS_CA_BUNDLE``/``SSL_CERT_FILE`` nor proxy variables leak in (``trust_env`` is off too).

Whether a failed request left this machine is known exactly, not guessed from a message: the adapter's pools
open their connections with :class:`NotSentHTTPConnection` / :class:`NotSentHTTPSConnection`, whose ``connect()``
marks whatever it raises (:func:`mark_not_sent`): a name that does not resolve, a refused connection, a connect
timeout, a TLS handshake that fails or times out. Nothing of the request is written before ``connect()`` has
returned, so a marked failure proves that the bank has nothing. Every other failure (while the request is written
or its answer read: a reset, a close, a TLS alert or a broken record, a read timeout) comes after the request may
have reached the bank; :func:`was_not_sent` tells the two apart by walking the exception's chain.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util.retry import Retry

from xs2a.errors import ConfigurationError

__all__ = [
    "NotSentHTTPConnection",
    "NotSentHTTPSConnection",
    "TlsAdapter",
    "build_session",
    "build_ssl_context",
    "mark_not_sent",
    "was_not_sent",
]

#: The attribute that marks an exception raised before any byte of the request was written.
_NOT_SENT = "xs2a_not_sent"

#: Raised by requests or urllib3 before a connection was asked for or handed out: nothing was written. (An
#: invalid address; a pool that was closed, or had no connection free in time.)
_BEFORE_ANY_CONNECTION = (
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
    urllib3.exceptions.ClosedPoolError,
    urllib3.exceptions.EmptyPoolError,
)


def mark_not_sent(exc: BaseException) -> BaseException:
    """Mark ``exc`` as raised before any byte of the request was written (the connection was never made), and
    return it. The client's connections mark their ``connect()`` failures; a stand-in for the network (a test's
    transport adapter) marks the failures it means as "not delivered"."""
    setattr(exc, _NOT_SENT, True)
    return exc


def was_not_sent(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it wraps) proves that nothing of the request left this machine: it was
    marked by :func:`mark_not_sent`, or requests/urllib3 raised it before any connection was asked for.

    The chain is followed through what requests and urllib3 use to wrap an error (``MaxRetryError.reason``, the
    exception's ``args``, ``raise ... from``), not through ``__context__``: an error raised while another was
    being handled says nothing about when the first one happened. An exception without a mark (one a stand-in
    adapter raised without marking it) is read as "may have been sent": the conservative reading."""
    seen: set[int] = set()
    stack: list[object] = [exc]
    while stack:
        item = stack.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        if getattr(item, _NOT_SENT, False) is True or isinstance(item, _BEFORE_ANY_CONNECTION):
            return True
        if isinstance(item, urllib3.exceptions.MaxRetryError):
            stack.append(item.reason)
        stack.extend(a for a in item.args if isinstance(a, BaseException))
        stack.append(item.__cause__)
    return False


class _MarksConnectFailures:
    """``connect()`` (name resolution, TCP, and for https the TLS handshake) marks what it raises as "not sent".

    urllib3 calls ``connect()`` before it writes the request: from ``_validate_conn`` for https, from
    ``http.client``'s first ``send`` for http (when the socket is still None), and never for a pooled connection
    that is already open. A kept-alive connection that the bank closed meanwhile is found dropped and opened anew
    before it is used; one that fails in the moment between that check and the write is "may have been sent"
    (unmarked): a POST then reads as an unknown outcome, which is safe, because reconciliation asks again with the
    same X-Request-ID and the bank holds at most one payment for it."""

    def connect(self) -> None:
        try:
            super().connect()  # type: ignore[misc]
        except Exception as exc:
            mark_not_sent(exc)
            raise


class NotSentHTTPConnection(_MarksConnectFailures, HTTPConnection):
    """urllib3's HTTPConnection whose connect failures are marked "not sent"."""


class NotSentHTTPSConnection(_MarksConnectFailures, HTTPSConnection):
    """urllib3's HTTPSConnection whose connect failures (the TLS handshake included) are marked "not sent"."""


class _HTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = NotSentHTTPConnection


class _HTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = NotSentHTTPSConnection


#: The pools of the client's adapter: urllib3's, opening the connections above.
_POOL_CLASSES = {"http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}


def build_ssl_context(
    *,
    ca_bundle: str | os.PathLike[str] | None = None,
    client_cert: str | os.PathLike[str] | None = None,
    client_key: str | os.PathLike[str] | None = None,
    client_key_passphrase: str | None = None,
) -> ssl.SSLContext:
    """A client context: TLS 1.2 floor, certificate and host name checked, trusting ``ca_bundle`` only.

    Without ``ca_bundle`` the operating system's trust store is used (the bank's certificate is then from a
    public CA); with it, nothing else is trusted.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verify_mode CERT_REQUIRED, check_hostname on
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if bool(client_cert) != bool(client_key):
        raise ConfigurationError("the TLS client certificate and its key go together")
    try:
        if ca_bundle is not None:
            context.load_verify_locations(cafile=os.fspath(ca_bundle))
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if client_cert and client_key:
            context.load_cert_chain(os.fspath(client_cert), os.fspath(client_key), password=client_key_passphrase)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: a file that is missing or not PEM
        raise ConfigurationError(f"the TLS certificates cannot be loaded: {exc}") from None
    return context


class TlsAdapter(HTTPAdapter):
    """An HTTPAdapter whose https connections use exactly the given SSL context, and whose connections mark a
    failure to connect as "not sent" (:func:`was_not_sent`)."""

    def __init__(self, ssl_context: ssl.SSLContext, **kwargs: Any) -> None:
        self.ssl_context = ssl_context
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self.ssl_context
        super().init_poolmanager(*args, **kwargs)
        # The pool manager picks a pool class per scheme from this mapping (urllib3 2.x, PoolManager._new_pool).
        self.poolmanager.pool_classes_by_scheme = _POOL_CLASSES

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        proxy_kwargs["ssl_context"] = self.ssl_context
        # Proxies are never used (the session does not read the environment); through one, connect failures
        # would carry no mark and be read conservatively ("may have been sent").
        return super().proxy_manager_for(proxy, **proxy_kwargs)

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        host_params, _ = super().build_connection_pool_key_attributes(request, verify, cert)
        # The context decides trust and client certificate; no ca_certs/cert_file from requests.
        pool_kwargs: dict[str, Any] = {}
        if host_params.get("scheme") == "https":
            pool_kwargs = {"ssl_context": self.ssl_context, "cert_reqs": "CERT_REQUIRED"}
        return host_params, pool_kwargs

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        # Only reached through the legacy get_connection path; keep requests from loading its CA bundle.
        if url.lower().startswith("https"):
            conn.cert_reqs = "CERT_REQUIRED"
            conn.ca_certs = None
            conn.ca_cert_dir = None


def build_session(ssl_context: ssl.SSLContext, *, pool_maxsize: int = 10, user_agent: str) -> requests.Session:
    """A session with one TLS adapter for http and https, no environment influence and no urllib3 retries.

    Retries are the client's own decision (only safe requests, re-signed each time), so urllib3 retries none.
    """
    session = requests.Session()
    session.trust_env = False  # no proxies, netrc or CA bundle from the environment
    session.verify = True
    session.headers.clear()
    session.headers["User-Agent"] = user_agent
    no_retries = Retry(total=0, connect=0, read=0, redirect=0, status=0, other=0, raise_on_status=False)
    adapter = TlsAdapter(ssl_context, pool_connections=4, pool_maxsize=pool_maxsize, max_retries=no_retries)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session
