"""The sandbox bank's access log line (bank_simulator/gunicorn.conf.py): the logger builds only the atoms its
format names, and writes the very line gunicorn's own atoms give."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

ROOT = Path(__file__).resolve().parents[2]
CONF = "bank_simulator/gunicorn.conf.py"


def bank_logger(access_log_format: str | None = None):
    settings: dict = {"__file__": str(ROOT / CONF)}
    exec(compile((ROOT / CONF).read_text(), CONF, "exec"), settings)  # noqa: S102 - the repository's own file
    config = Config()
    for name in ("accesslog", "access_log_format", "logger_class"):
        config.set(name, settings[name])
    if access_log_format is not None:
        config.set("access_log_format", access_log_format)
    return settings["logger_class"](config)


def exchange():
    environ = {
        "REMOTE_ADDR": "127.0.0.1",
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/v1/accounts/enc!!x=/balances?withBalance=true",
        "PATH_INFO": "/v1/accounts/enc!!x=/balances",
        "QUERY_STRING": "withBalance=true",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_USER_AGENT": 'tpp "portal"/1.0',
        "HTTP_REFERER": "https://tpp.example/?state=secret",
        "HTTP_X_REQUEST_ID": "0f0e",
    }
    request = SimpleNamespace(headers=[("USER-AGENT", 'tpp "portal"/1.0'), ("X-REQUEST-ID", "0f0e")])
    response = SimpleNamespace(status="200 OK", sent=321, headers=[("Content-Type", "application/json")])
    return response, request, environ, dt.timedelta(seconds=1, microseconds=2500)


def line(logger) -> str:
    (handler,) = [found for found in logger.access_log.handlers if getattr(found, "_gunicorn", False)]
    stream = io.StringIO()
    handler.setStream(stream)
    logger.access(*exchange())
    return stream.getvalue()


@pytest.mark.parametrize("access_log_format", [None, '%(h)s "%({x-request-id}i)s" %({content-type}o)s %(L)s'])
def test_the_access_line_is_the_one_gunicorns_atoms_give(monkeypatch, access_log_format):
    logger = bank_logger(access_log_format)
    ours = line(logger)
    monkeypatch.setattr(type(logger), "atoms", Logger.atoms)
    assert ours == line(logger)
    assert "query" not in ours and "secret" not in ours and "withBalance" not in ours


def test_the_banks_format_builds_no_atom_per_header_or_environ_variable():
    logger = bank_logger()
    atoms = logger.atoms(*exchange())
    assert not any(name.startswith("{") for name in atoms), sorted(atoms)
    written = line(logger)
    assert written.startswith("127.0.0.1 - [")
    assert '"GET /v1/accounts/enc!!x=/balances HTTP/1.1" 200 321' in written
    assert written.endswith(' "tpp \\"portal\\"/1.0" 1002ms\n'), written
