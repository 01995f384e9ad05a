"""One smoke test with a real Celery worker consuming from the real broker (Redis in CI, files by default)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.core.cache import CacheHandler

from core.tasks import ping
from tpp_portal import settings as project

ROOT = Path(__file__).resolve().parents[2]


def test_a_real_worker_consumes_a_task_from_the_broker(tmp_path):
    token = uuid.uuid4().hex
    # The cache the worker writes to: the project's (Redis, or files in VAR_DIR), not the empty in-memory cache
    # that each test gets here (tests/conftest.py).
    worker_cache = CacheHandler(project.CACHES)["default"]
    log = tmp_path / "worker.log"
    with log.open("w") as output:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tpp_portal",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "INFO",
                "--hostname",
                f"smoke-{token}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "tpp_portal.settings"},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        ping.delay(token)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and worker_cache.get(f"ping:{token}") is None and worker.poll() is None:
            time.sleep(0.2)
        assert worker_cache.get(f"ping:{token}") is not None, log.read_text()[-3000:]
    finally:
        worker_cache.delete(f"ping:{token}")
        worker_cache.close()
        worker.terminate()
        worker.wait(timeout=30)
    output = log.read_text()
    expected_transport = "redis" if settings.REDIS_URL else "filesystem"
    assert expected_transport in output
    # The worker logs through the portal's LOGGING: the request-id field is there and secrets are redacted.
    assert re.search(r"INFO core\.tasks \[[^\]]+\] ping received token=\[redacted\]", output), output[-3000:]
    assert token not in output.replace(f"smoke-{token}", "")
