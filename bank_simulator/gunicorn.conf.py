"""Gunicorn settings of the sandbox bank (``make bank``, ``make run``, docker).

No query string and no Referer in any log line (the SCA page's ``/sca/authorize?state=...``, the TPP's query
parameters): the access log writes the path only, and gunicorn's error log loses the query of any path it names.
The same as tpp_portal/gunicorn.conf.py, kept apart so that the bank imports nothing of the portal.
"""

import logging
import os
import re
import time

from gunicorn import glogging

bind = os.environ.get("BANK_SIM_BIND", f"127.0.0.1:{os.environ.get('PORT', '8001')}")
workers = int(os.environ.get("BANK_SIM_WORKERS", "2"))
threads = int(os.environ.get("BANK_SIM_THREADS", "4"))
worker_class = "gthread"
# Empty: no access log at all (the benchmarks). Even into /dev/null gunicorn formats every line, which cost the
# bank about a tenth of its CPU per request.
accesslog = os.environ.get("BANK_SIM_ACCESS_LOG", "-") or None
# remote address, time, "method path protocol", status, bytes, user agent, duration in milliseconds.
access_log_format = '%(h)s - %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(M)sms'
timeout = 60

_QUERY = re.compile(r"(?P<path>/[^\s?#\"']*)\?[^\s\"']*")


class _NoQuery(logging.Filter):
    """Drops the query of every path in a record's message and traceback text."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _QUERY.sub(r"\g<path>?[query removed]", record.getMessage())
        record.args = None
        if record.exc_info:
            record.exc_text = _QUERY.sub(
                r"\g<path>?[query removed]", logging.Formatter().formatException(record.exc_info)
            )
            record.exc_info = None
        return True


class QuerylessLogger(glogging.Logger):
    """gunicorn's logger, its error log filtered by :class:`_NoQuery` (set up again on each reload), and both its
    logs on UTC's clock with the offset shown, as every other log line of the product: gunicorn uses the process's
    local time, which Django sets to TIME_ZONE (Europe/Oslo) in the workers and not in the master."""

    def setup(self, cfg) -> None:
        super().setup(cfg)
        if not any(isinstance(found, _NoQuery) for found in self.error_log.filters):
            self.error_log.addFilter(_NoQuery())
        for handler in self.error_log.handlers:
            if getattr(handler, "_gunicorn", False) and handler.formatter is not None:
                handler.formatter.converter = time.gmtime  # its datefmt's %z then reads +0000

    def now(self) -> str:
        """The access log's %(t)s: [07/Dec/2026:05:10:00 +0000]."""
        return time.strftime("[%d/%b/%Y:%H:%M:%S +0000]", time.gmtime())

    def atoms(self, resp, req, environ, request_time) -> dict:
        """gunicorn's atoms, but for a format that names no header or environ variable (``{name}i``, ``{name}o``,
        ``{name}e``; as access_log_format above) without those: gunicorn adds one atom per request header,
        response header and environ variable (some forty) to every line's atoms and escapes each of them, about
        half of what writing the line cost. The same line either way (test_access_log_line)."""
        if "{" in self.cfg.access_log_format:
            return super().atoms(resp, req, environ, request_time)
        status = resp.status
        if isinstance(status, str):
            status = status.split(None, 1)[0]
        sent = getattr(resp, "sent", None)
        return {
            "h": environ.get("REMOTE_ADDR", "-"),
            "l": "-",
            "u": self._get_user(environ) or "-",
            "t": self.now(),
            "r": f"{environ['REQUEST_METHOD']} {environ['RAW_URI']} {environ['SERVER_PROTOCOL']}",
            "s": status,
            "m": environ.get("REQUEST_METHOD"),
            "U": environ.get("PATH_INFO"),
            "q": environ.get("QUERY_STRING"),
            "H": environ.get("SERVER_PROTOCOL"),
            "b": str(sent) if sent is not None else "-",
            "B": sent,
            "f": environ.get("HTTP_REFERER", "-"),
            "a": environ.get("HTTP_USER_AGENT", "-"),
            "T": request_time.seconds,
            "D": (request_time.seconds * 1000000) + request_time.microseconds,
            "M": (request_time.seconds * 1000) + int(request_time.microseconds / 1000),
            "L": f"{request_time.seconds}.{request_time.microseconds:06d}",
            "p": f"<{os.getpid()}>",
        }


logger_class = QuerylessLogger
# No control socket (gunicorn 25.1's gunicornc interface, by default in ~/.gunicorn/): nothing here uses it, and a
# development or test run must write nothing outside the working tree.
control_socket_disable = True


def _keep_the_applications_date() -> None:
    """Send the Date header the bank set, not one of gunicorn's own.

    gunicorn (27) drops a Date the application gives and writes its own, taken when it writes the headers. With
    BANK_SIM_SIGN_RESPONSES the bank signs the Date it set, so an answer whose headers were written in a later
    second than it was signed in (a second boundary between the two, or BANK_SIM_LATENCY_MS) reached the client
    with another Date than the signed one, and its signature failed. The application's Date is kept when it gives
    one (only the signing does); gunicorn's otherwise."""
    from gunicorn import util
    from gunicorn.http import wsgi

    if getattr(wsgi.Response, "keeps_the_applications_date", False):
        return
    util.hop_headers.discard("date")
    servers_headers = wsgi.Response.default_headers

    def default_headers(self):
        headers = servers_headers(self)
        if any(name.lower() == "date" for name, _value in self.headers):
            headers = [line for line in headers if not line.lower().startswith("date:")]
        return headers

    wsgi.Response.default_headers = default_headers
    wsgi.Response.keeps_the_applications_date = True


_keep_the_applications_date()
