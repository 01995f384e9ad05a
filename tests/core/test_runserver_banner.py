"""make run's development server prints its start in UTC with the offset, as every log line does."""

from __future__ import annotations

import io
import re

from django.core.management import get_commands, load_command_class


def test_runserver_is_cores_and_its_banner_is_in_utc():
    assert get_commands()["runserver"] == "core"
    command = load_command_class("core", "runserver")
    out = io.StringIO()
    command.stdout = command.stdout.__class__(out)
    command.addr, command._raw_ipv6, command.protocol = "127.0.0.1", False, "http"

    command.on_bind(8000)

    first, *rest = out.getvalue().splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000", first), first
    assert "Starting development server at http://127.0.0.1:8000/" in rest
