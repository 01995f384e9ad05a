"""The README stays true: every variable the code reads is in its tables, and its commands exist."""

import re
import subprocess
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
    for target in re.findall(r"(?:`|^)make ([\w-]+)", README, re.M):
        assert re.search(rf"^{target}:", makefile, re.M), f"make {target} is in the README but not the Makefile"
    assert "make test" in (ROOT / ".ci/run").read_text()


def test_the_layout_is_the_picture_of_docs_architecture():
    """The README's Layout section and docs/architecture.md draw the layers with the same diagram."""

    def diagram(text: str) -> str:
        found = re.search(r"^```\n(  staff .*?)^```$", text, re.M | re.S)
        assert found, "no layer diagram (a code block starting with the staff layer)"
        return found.group(1)

    layout = README[README.index("## Layout") :]
    assert diagram(layout) == diagram((ROOT / "docs/architecture.md").read_text())
    assert "(docs/architecture.md)" in layout


def test_ci_runs_only_the_readme_commands():
    """.ci/run installs nothing itself (make test does) and runs only what the README tells a user to run."""
    script = (ROOT / ".ci/run").read_text()
    lines = [line for line in script.splitlines() if not line.lstrip().startswith(("#", "echo "))]
    commands = [found.group(1).strip() for line in lines if (found := re.search(r"\bmake (\w.*)$", line))]
    assert commands, script
    for command in commands:
        assert f"`make {command}`" in README or f"\nmake {command} " in README, (
            f"make {command} is not in the README"
        )
    assert not [line for line in lines if "apt-get" in line], "make test installs the system packages, not CI"


def test_make_help_names_every_target_the_readme_uses():
    shown = subprocess.run(
        ["make", "--no-print-directory", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    listed = set(re.findall(r"^make ([\w-]+) ", shown, re.M))
    used = set(re.findall(r"(?:`|^)make ([\w-]+)", README, re.M))
    assert used, "no make command found in the README"
    assert used <= listed, f"make help leaves out {sorted(used - listed)}"
