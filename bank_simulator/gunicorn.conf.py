"""Gunicorn settings of the sandbox bank (``make bank``, ``make run``, docker)."""

import os

bind = os.environ.get("BANK_SIM_BIND", f"127.0.0.1:{os.environ.get('PORT', '8001')}")
workers = int(os.environ.get("BANK_SIM_WORKERS", "2"))
threads = int(os.environ.get("BANK_SIM_THREADS", "4"))
worker_class = "gthread"
# Empty: no access log at all (the benchmarks). Even into /dev/null gunicorn formats every line, which cost the
# bank about a tenth of its CPU per request.
accesslog = os.environ.get("BANK_SIM_ACCESS_LOG", "-") or None
timeout = 60
