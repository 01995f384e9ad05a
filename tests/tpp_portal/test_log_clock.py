"""One clock in every process's log: UTC with the offset shown, whatever TIME_ZONE (Europe/Oslo) makes the local
time of a process (Django sets it on start): the portal's LOGGING (plain and JSON), the sandbox bank's, and the
error and access logs of both gunicorn configurations, which also write no control socket."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from gunicorn.config import Config

from bank_simulator.logformat import UtcFormatter as BankUtcFormatter
from tpp_portal.logging_config import logging_config

ROOT = Path(__file__).resolve().parents[2]
# 05:10:00.123 UTC is 06:10 in Oslo and 19:10 in Kiritimati (+14): any local clock shows another hour.
WHEN = datetime(2026, 12, 7, 5, 10, 0, 123000, tzinfo=UTC).timestamp()


@pytest.fixture(autouse=True)
def far_local_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def record(message: str = "hello") -> logging.LogRecord:
    made = logging.LogRecord("test.clock", logging.INFO, __file__, 1, message, None, None)
    made.created, made.msecs, made.request_id = WHEN, 123.0, "-"
    return made


def portal_formatter(*, json_lines: bool) -> logging.Formatter:
    config = logging_config(level="INFO", json=json_lines)
    return logging.config.DictConfigurator(config).configure_formatter(
        dict(config["formatters"]["json" if json_lines else "plain"])
    )


def test_the_local_zone_of_the_test_is_not_utc():
    assert time.strftime("%H", time.localtime(WHEN)) == "19"


def test_the_portals_plain_lines_are_in_utc_with_the_offset():
    assert portal_formatter(json_lines=False).format(record()).startswith("2026-12-07T05:10:00.123+0000 INFO ")


def test_the_portals_json_lines_are_in_utc_with_the_offset():
    line = json.loads(portal_formatter(json_lines=True).format(record()))
    assert line["time"] == "2026-12-07T05:10:00+0000"


def test_the_sandbox_banks_lines_are_in_utc_with_the_offset():
    # The bank's LOGGING names it by path (its settings are not loaded in the portal's test process).
    assert '"()": "bank_simulator.logformat.UtcFormatter"' in (ROOT / "bank_simulator/settings.py").read_text()
    formatter = BankUtcFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    assert formatter.format(record()) == "2026-12-07T05:10:00.123+0000 INFO test.clock hello"


@pytest.mark.parametrize("conf", ["tpp_portal/gunicorn.conf.py", "bank_simulator/gunicorn.conf.py"])
def test_gunicorns_logs_are_in_utc_with_the_offset_and_it_has_no_control_socket(conf):
    settings: dict = {"__file__": str(ROOT / conf)}
    exec(compile((ROOT / conf).read_text(), conf, "exec"), settings)  # noqa: S102 - the repository's own file
    config = Config()
    for name in ("accesslog", "access_log_format", "logger_class", "control_socket_disable"):
        if name in settings:
            config.set(name, settings[name])
    assert config.control_socket_disable is True
    logger = settings["logger_class"](config)
    # The access log's %(t)s: now, on UTC's clock, the offset +0000.
    shown = datetime.strptime(logger.now(), "[%d/%b/%Y:%H:%M:%S %z]")
    assert shown.utcoffset() == timedelta(0) and abs(shown - datetime.now(UTC)) < timedelta(seconds=5), shown
    (handler,) = [found for found in logger.error_log.handlers if getattr(found, "_gunicorn", False)]
    stream = io.StringIO()
    handler.setStream(stream)
    logger.error_log.handle(record())
    assert stream.getvalue().startswith("[2026-12-07 05:10:00 +0000] ["), stream.getvalue()
