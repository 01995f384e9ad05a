"""The HTTP session: one pooled ``requests.Session`` per client, TLS 1.2 or higher, trust limited to the bank's CA.

The SSL context carries everything (trust anchors, minimum version, QWAC client certificate) and is mounted
through an HTTPAdapter that passes no CA file of its own to urllib3, so that neither requests' bundled CAs nor
``REQUESTS_CA_BUNDLE``/``SSL_CERT_FILE`` nor proxy variables leak in (``trust_env`` is off too).
"""

from __future__ import annotations

import os
import ssl
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from xs2a.errors import ConfigurationError

__all__ = ["TlsAdapter", "build_session", "build_ssl_context"]


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
    """An HTTPAdapter whose https connections use exactly the given SSL context."""

    def __init__(self, ssl_context: ssl.SSLContext, **kwargs: Any) -> None:
        self.ssl_context = ssl_context
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self.ssl_context
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        proxy_kwargs["ssl_context"] = self.ssl_context
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
