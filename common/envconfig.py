"""django-environ for the settings of both services (the portal's and the sandbox bank's), with what it lacks:

- ``<NAME>_FILE`` names a file holding ``<NAME>``'s value (secrets mounted as files; django-environ's own
  ``FileAwareMapping``), its trailing newline dropped, and a file that cannot be read named in the error;
- a malformed value stops start-up with ``ImproperlyConfigured`` naming the variable (django-environ raises the
  parser's own ValueError);
- booleans and numbers are read strictly (django-environ takes ``maybe`` for false and strips letters from a
  number);
- an empty value counts as unset (a compose file's ``${NAME:-}``);
- every variable read is recorded with its default (``variables``), so that tests can check the README and the
  compose file against what the settings really read.
"""

from __future__ import annotations

import builtins
import math
import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured


class _FileAware(environ.FileAwareMapping):
    def __init__(self, env: MutableMapping[str, str] | None = None) -> None:
        super().__init__(env=env if env is not None else os.environ, cache=False)

    def __getitem__(self, key: str) -> str:
        path = self.env.get(f"{key}_FILE")
        try:
            value = super().__getitem__(key)
        except OSError as exc:
            raise ImproperlyConfigured(f"{key}_FILE: cannot read {path!r}: {exc.strerror}") from None
        return value.rstrip("\r\n") if path else value


class Env(environ.Env):
    """``environ.Env`` over the environment (or ``environ_map``), as the module says."""

    def __init__(self, environ_map: MutableMapping[str, str] | None = None) -> None:
        super().__init__()
        self.ENVIRON = _FileAware(environ_map)
        self.variables: dict[str, str] = {}  # name -> its default, as text ("" when none)

    def get_value(
        self, var: str, cast: Any = None, default: Any = environ.Env.NOTSET, parse_default: bool = False
    ):
        unset = default is self.NOTSET or default is None
        self.variables.setdefault(var, "" if unset else str(default))
        if self.ENVIRON.get(var) == "":  # empty counts as unset
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"{var}: this environment variable is required and is not set")
            return default
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except ImproperlyConfigured as exc:
            raise ImproperlyConfigured(f"{var}: {exc}") from None
        except (ValueError, TypeError) as exc:
            raise ImproperlyConfigured(f"{var}: malformed value ({exc})") from None

    def bool(self, var: str, default: Any = environ.Env.NOTSET):
        raw = self.get_value(var, cast=str, default=default)
        if not isinstance(raw, str):  # the default
            return raw
        try:
            return _BOOLEANS[raw.strip().lower()]
        except KeyError:
            raise ImproperlyConfigured(f"{var}: expected true or false, got {raw!r}") from None

    def float(self, var: str, default: Any = environ.Env.NOTSET):
        raw = self.get_value(var, cast=str, default=default)
        if not isinstance(raw, str):
            return raw
        try:
            value = builtins.float(raw)
        except ValueError:
            raise ImproperlyConfigured(f"{var}: expected a number, got {raw!r}") from None
        if not math.isfinite(value):
            raise ImproperlyConfigured(f"{var}: expected a finite number above 0, got {raw!r}")
        return value

    def email_url(self, var: str, default: Any = environ.Env.NOTSET, backend: str | None = None):
        value = self.get_value(var, default=default)
        try:
            return self.email_url_config(value, backend=backend)
        except (ValueError, KeyError) as exc:
            raise ImproperlyConfigured(f"{var}: malformed e-mail URL ({exc})") from None


_BOOLEANS = {
    "true": True,
    "1": True,
    "yes": True,
    "on": True,
    "false": False,
    "0": False,
    "no": False,
    "off": False,
}


# --- checks of values read: each raises ImproperlyConfigured naming the variable -------------------------


def http_url(name: str, value: str | None) -> str | None:
    """An absolute http(s) address without a query, as given but for a trailing slash; None stays None."""
    if value is None:
        return None
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ImproperlyConfigured(f"{name}: malformed port in {value!r}") from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ImproperlyConfigured(f"{name}: expected an absolute http or https address, got {value!r}")
    if parts.query or parts.fragment:
        raise ImproperlyConfigured(f"{name}: must not carry a query or fragment, got {value!r}")
    return value.rstrip("/")


def positive(name: str, value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise ImproperlyConfigured(f"{name}: expected a finite number above 0, got {value!r}")
    return value


def at_least(name: str, value: int, minimum: int) -> int:
    if value < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {value}")
    return value


def existing_file(name: str, value: str | None) -> Path | None:
    """The path of a file that must exist (None: not configured)."""
    if value is None:
        return None
    if not Path(value).is_file():
        raise ImproperlyConfigured(f"{name}: no such file {value!r}")
    return Path(value)
