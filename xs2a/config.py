"""The client's configuration: where the bank is, the TPP's credentials, and how patiently to call it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from xs2a.errors import SAFE_METHODS, ConfigurationError

__all__ = [
    "DEFAULT_ACCEPT_FIX",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RESPONSE_MAX_AGE",
    "ClientConfig",
    "RetryPolicy",
]

#: Spec section 9: all four announced fixes.
DEFAULT_ACCEPT_FIX: tuple[str, ...] = (
    "amount-as-string",
    "cardaccount-switch-originalamount-and-transactionamount",
    "longer-names",
    "cash-account-type-iso",
)
#: The longest answer the client reads: the bank's largest answers (a page of transactions) are far smaller.
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
#: Seconds a signed answer's Date may be from the client's clock (either way) with the bank's seal configured.
DEFAULT_RESPONSE_MAX_AGE = 300.0


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a safe request again."""

    max_attempts: int = 3  # in all, the first one included
    backoff_base: float = 0.5  # seconds; attempt n waits up to base * 2**(n-1) ...
    backoff_max: float = 8.0  # ... and never more than this
    max_retry_after: float = 30.0  # a longer Retry-After is not waited for: the error goes to the caller
    retry_methods: frozenset[str] = frozenset({"GET"})
    retry_statuses: frozenset[int] = frozenset({429, 502, 503, 504})

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError("RetryPolicy.max_attempts must be at least 1")
        if self.retry_methods - SAFE_METHODS:
            raise ConfigurationError("only safe methods (GET, HEAD, OPTIONS) may be retried")

    def backoff(self, attempt: int, rng: Callable[[], float]) -> float:
        """Full jitter: uniform in [0, min(max, base * 2**(attempt-1))]."""
        return rng() * min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))


@dataclass(frozen=True)
class ClientConfig:
    """Where the bank is, the TPP's credentials, and how the client calls it (validated when made)."""

    base_url: str
    signing_key: rsa.RSAPrivateKey
    signing_certificate: x509.Certificate
    redirect_uri: str  # TPP-Redirect-URI, sent on every request
    ca_bundle: str | None = None
    tls_client_cert: str | None = None  # QWAC
    tls_client_key: str | None = None
    tls_client_key_passphrase: str | None = None
    response_certificate: x509.Certificate | None = None  # the bank's seal: signed responses are verified
    response_max_age: float = DEFAULT_RESPONSE_MAX_AGE  # seconds between a signed answer's Date and the clock
    timeout: float | tuple[float, float] = 20.0  # seconds (connect, read)
    accept_fix: tuple[str, ...] = DEFAULT_ACCEPT_FIX
    digest_algorithm: str = "SHA-256"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    pool_maxsize: int = 10
    user_agent: str = "fjordpay-xs2a/0.1 (python-requests)"
    brand_logging_information: str | None = None  # TPP-Brand-Logging-Information
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # a longer answer is not read (ResponseTooLargeError)

    def __post_init__(self) -> None:
        timeouts = self.timeout if isinstance(self.timeout, tuple) else (self.timeout,)
        if not timeouts or any(t is None or t <= 0 for t in timeouts):
            raise ConfigurationError("ClientConfig.timeout: a positive number of seconds is required")
        redirect = urlsplit(self.redirect_uri)
        if redirect.scheme not in {"http", "https"} or not redirect.netloc:
            raise ConfigurationError("ClientConfig.redirect_uri: an absolute http(s) address is required")
        if isinstance(self.max_response_bytes, bool) or not isinstance(self.max_response_bytes, int):
            raise ConfigurationError("ClientConfig.max_response_bytes: a whole number of bytes is required")
        if self.max_response_bytes < 1:
            raise ConfigurationError("ClientConfig.max_response_bytes: must be at least 1")
        if (
            isinstance(self.response_max_age, bool)
            or not isinstance(self.response_max_age, int | float)
            or not 0 < self.response_max_age < float("inf")
        ):
            raise ConfigurationError("ClientConfig.response_max_age: a finite number of seconds above 0 is needed")
        for fix in self.accept_fix:
            if not fix or "," in fix or not fix.isprintable():
                raise ConfigurationError(f"ClientConfig.accept_fix: {fix!r} is not a fix name")
