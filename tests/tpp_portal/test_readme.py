"""The README stays true: every variable the code reads is in its tables, and its commands exist."""

import re
from pathlib import Path

from tests.tpp_portal.test_docker import simulator_variables
from tpp_portal import settings as portal_settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# First column of the configuration tables; a row may name several variables (`A`, `B`).
DOCUMENTED = {
    name
    for line in README.splitlines()
    if line.startswith("| `")
    for name in re.findall(r"`([A-Z_]+)`", line.split(" | ")[0])
}


def test_every_portal_variable_is_documented():
    missing = set(portal_settings.env.variables) - DOCUMENTED
    assert not missing, f"README lacks: {sorted(missing)}"


def test_every_sandbox_bank_variable_is_documented():
    missing = simulator_variables() - DOCUMENTED - {"VAR_DIR", "LOG_LEVEL"}
    assert not missing, f"README lacks: {sorted(missing)}"


def test_the_readme_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", README, re.M):
        assert re.search(rf"^{target}:", makefile, re.M), f"make {target} is in the README but not the Makefile"
    assert "make test" in (ROOT / ".ci/run").read_text()
