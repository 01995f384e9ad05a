"""``python -m bank_simulator <command>``: Django management for the sandbox bank (its own settings)."""

import os
import sys


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "bank_simulator.settings"
    from django.core.management import execute_from_command_line

    execute_from_command_line([f"{sys.executable} -m bank_simulator", *sys.argv[1:]])


if __name__ == "__main__":
    main()
