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
import time

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


logger_class = QuerylessLogger
# No control socket (gunicorn 25.1's gunicornc interface, by default in ~/.gunicorn/): nothing here uses it, and a
# development or test run must write nothing outside the working tree.
control_socket_disable = True
