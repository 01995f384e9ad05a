#!/usr/bin/env python
"""Django's command-line utility for the TPP portal (the sandbox bank has its own: python -m bank_simulator)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
