"""``manage.py serve_metrics``: the portal's metrics in the Prometheus text format, at /metrics of METRICS_BIND.

One process for the whole portal (docs/operations.md, Metrics): it sums the counters that every web and worker
process writes into METRICS_DIR and reads the portal's state from the database, the broker and the certificate
files at each scrape. Bind it to loopback or to a private network only (the default is 127.0.0.1:9100); it has
no authentication, and the public proxy never routes to it.
"""

from __future__ import annotations

from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections
from prometheus_client import make_wsgi_app

from core import metrics


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args) -> None:
        return  # one line per scrape would drown the log


class Command(BaseCommand):
    help = "Serve the portal's Prometheus metrics at http://METRICS_BIND/metrics (loopback by default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default=None, help="host:port (default: METRICS_BIND); port 0 picks one")

    def handle(self, *args, bind: str | None = None, **options) -> None:
        host, _, port = (bind or settings.METRICS_BIND).rpartition(":")
        app = make_wsgi_app(metrics.registry())

        def only_metrics(environ, start_response):
            if environ.get("PATH_INFO") != "/metrics":
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"not found: the metrics are at /metrics\n"]
            close_old_connections()  # a long-lived process: drop a connection the server has closed
            try:
                return app(environ, start_response)
            finally:
                close_old_connections()

        server: WSGIServer = make_server(host.strip("[]"), int(port), only_metrics, handler_class=_QuietHandler)
        bound_host, bound_port = server.server_address[:2]
        self.stdout.write(f"serving metrics on http://{bound_host}:{bound_port}/metrics", ending="\n")
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
