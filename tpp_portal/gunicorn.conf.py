"""Gunicorn settings of the portal's web process (docker/compose.yaml's ``web``, the image's CMD).

Every gunicorn command of the portal passes ``--config tpp_portal/gunicorn.conf.py``; the address and the number
of workers stay on the command line.

No query string and no Referer in any log line: the bank sends the customer back to ``/bank/callback?state=...&
tpp-session-id=...&psu-id=...&psu-corporate-id=...``, the login page carries that address in ``next=``, the search
box's ``q=`` may hold a name, and the Referer of the next page repeats them all. The access log writes the path
only (``%(U)s``, not ``%(r)s`` or ``%(q)s``), and gunicorn's own error log ("Error handling request GET
/bank/callback?...", "Invalid request from ip=...: ...") loses the query of any path it names
(:class:`QuerylessLogger`). bank_simulator/gunicorn.conf.py does the same for the sandbox bank; the test
tests/tpp_portal/test_access_logs.py runs both behind docker/proxy's nginx.
"""

import logging
import re

from gunicorn import glogging

accesslog = "-"
# remote address, time, "method path protocol", status, bytes, user agent, duration in milliseconds.
access_log_format = '%(h)s - %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(M)sms'

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
    """gunicorn's logger, its error log filtered by :class:`_NoQuery` (set up again on each reload)."""

    def setup(self, cfg) -> None:
        super().setup(cfg)
        if not any(isinstance(found, _NoQuery) for found in self.error_log.filters):
            self.error_log.addFilter(_NoQuery())


logger_class = QuerylessLogger
