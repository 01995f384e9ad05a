"""Gunicorn settings of the sandbox bank (``make bank``, ``make run``, docker)."""

import os

bind = os.environ.get("BANK_SIM_BIND", f"127.0.0.1:{os.environ.get('PORT', '8001')}")
workers = int(os.environ.get("BANK_SIM_WORKERS", "2"))
threads = int(os.environ.get("BANK_SIM_THREADS", "4"))
worker_class = "gthread"
accesslog = "-"
timeout = 60
