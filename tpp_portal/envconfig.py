"""Reading configuration from the environment, loudly.

A thin layer over django-environ that

- records every variable a settings module reads (name, default, description), so the README table and the
  docker compose file can be checked against what the code really reads;
- supports ``<NAME>_FILE`` for secrets (Docker/Kubernetes secrets mounted as files);
- turns every malformed value into ``ImproperlyConfigured`` naming the variable, so a settings mistake stops
  start-up with a message an operator can act on.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

_UNSET: Any = object()


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    help: str
    secret: bool = False


class Config:
    """Typed accessors over ``os.environ`` that remember what was read."""

    def __init__(self, environ_map: os._Environ | dict[str, str] | None = None) -> None:
        self._environ = os.environ if environ_map is None else environ_map
        self._env = environ.Env()
        self._env.ENVIRON = self._environ
        self.variables: dict[str, Variable] = {}

    # -- bookkeeping -------------------------------------------------------------------------------
    def _record(self, name: str, default: Any, help: str, secret: bool = False) -> None:
        shown = "" if default is _UNSET or default is None else str(default)
        self.variables[name] = Variable(name, shown, help, secret)

    def _raw(self, name: str, *, allow_file: bool = False) -> str | None:
        if allow_file and (path := self._environ.get(f"{name}_FILE")):
            try:
                return Path(path).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ImproperlyConfigured(f"{name}_FILE: cannot read {path!r}: {exc.strerror}") from exc
        value = self._environ.get(name)
        return None if value is None or value == "" else value

    def _missing(self, name: str, default: Any) -> Any:
        if default is _UNSET:
            raise ImproperlyConfigured(f"{name}: this environment variable is required and is not set")
        return default

    # -- accessors ---------------------------------------------------------------------------------
    def str(self, name: str, default: Any = _UNSET, *, help: str, secret: bool = False) -> Any:
        self._record(name, default, help, secret)
        value = self._raw(name, allow_file=secret)
        return self._missing(name, default) if value is None else value

    def bool(self, name: str, default: Any = _UNSET, *, help: str) -> Any:
        self._record(name, default, help)
        value = self._raw(name)
        if value is None:
            return self._missing(name, default)
        lowered = value.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ImproperlyConfigured(f"{name}: expected true or false, got {value!r}")

    def int(self, name: str, default: Any = _UNSET, *, help: str, minimum: int | None = None) -> Any:
        self._record(name, default, help)
        value = self._raw(name)
        if value is None:
            return self._missing(name, default)
        try:
            number = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: expected a whole number, got {value!r}") from None
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {number}")
        return number

    def float(self, name: str, default: Any = _UNSET, *, help: str, positive: bool = True) -> Any:
        """A finite number (strictly positive unless ``positive=False``): durations and timeouts."""
        self._record(name, default, help)
        value = self._raw(name)
        if value is None:
            return self._missing(name, default)
        try:
            number = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: expected a number, got {value!r}") from None
        if not math.isfinite(number) or (positive and number <= 0):
            raise ImproperlyConfigured(f"{name}: expected a finite number above 0, got {value!r}")
        return number

    def list(self, name: str, default: Any = _UNSET, *, help: str) -> Any:
        self._record(name, ",".join(default) if isinstance(default, list | tuple) else default, help)
        value = self._raw(name)
        if value is None:
            return list(self._missing(name, default))
        return [item.strip() for item in value.split(",") if item.strip()]

    def url(
        self, name: str, default: Any = _UNSET, *, help: str, schemes: tuple[str, ...] = ("http", "https")
    ) -> Any:
        """An absolute http(s) address, returned without a trailing slash."""
        self._record(name, default, help)
        value = self._raw(name)
        if value is None:
            value = self._missing(name, default)
            if value is None:
                return None
        parts = urlsplit(value)
        if parts.scheme not in schemes or not parts.hostname:
            raise ImproperlyConfigured(
                f"{name}: expected an absolute {' or '.join(schemes)} address, got {value!r}"
            )
        try:
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError:
            raise ImproperlyConfigured(f"{name}: malformed port in {value!r}") from None
        if parts.query or parts.fragment:
            raise ImproperlyConfigured(f"{name}: must not carry a query or fragment, got {value!r}")
        return value.rstrip("/")

    def email(self, name: str, default: str, *, help: str) -> dict[str, Any]:
        """An e-mail server address (``smtp+tls://user:password@host:587``, ``consolemail://``)."""
        self._record(name, default, help, secret=True)
        value = self._raw(name, allow_file=True) or default
        try:
            return self._env.email_url_config(value)
        except Exception as exc:  # django-environ raises several types for malformed URLs
            raise ImproperlyConfigured(f"{name}: malformed e-mail URL ({type(exc).__name__})") from None

    def db(self, name: str, default: str, *, help: str) -> dict[str, Any]:
        self._record(name, default, help, secret=True)
        value = self._raw(name, allow_file=True) or default
        scheme = value.split(":", 1)[0]
        if scheme not in {"sqlite", "postgres", "postgresql", "pgsql", "psql"}:
            raise ImproperlyConfigured(f"{name}: unsupported database scheme {scheme!r} (use sqlite or postgres)")
        try:
            config = self._env.db_url_config(value)
        except Exception as exc:  # django-environ raises several types for malformed URLs
            raise ImproperlyConfigured(f"{name}: malformed database URL ({exc})") from exc
        if not config.get("NAME"):
            raise ImproperlyConfigured(f"{name}: the database URL names no database")
        return config

    def redis_url(self, name: str, *, help: str) -> str | None:
        self._record(name, None, help, secret=True)
        value = self._raw(name, allow_file=True)
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in {"redis", "rediss"} or not parts.hostname:
            raise ImproperlyConfigured(f"{name}: expected redis://host:port/db, got a malformed address")
        try:
            parts.port  # noqa: B018
        except ValueError:
            raise ImproperlyConfigured(f"{name}: malformed port in the Redis address") from None
        return value

    def path(self, name: str, default: Any = _UNSET, *, help: str, must_exist: bool = True) -> Any:
        """A file path; relative paths are taken from ``base``. ``None`` default makes it optional."""
        self._record(name, default, help)
        value = self._raw(name)
        if value is None:
            value = self._missing(name, default)
            if value is None:
                return None
        path = Path(value)
        if must_exist and not path.is_file():
            raise ImproperlyConfigured(f"{name}: no such file {str(path)!r}")
        return path


def require_file(name: str, path: Path | None) -> None:
    """Raise naming ``name`` when a configured file is missing (for checks made after defaults resolve)."""
    if path is not None and not path.is_file():
        raise ImproperlyConfigured(f"{name}: no such file {str(path)!r}")
