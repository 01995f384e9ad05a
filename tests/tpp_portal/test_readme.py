"""The README stays true: every variable the code reads is in its tables, and its commands exist."""

import ast
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


def _seeded_customers() -> dict[str, tuple[str, str, int]]:
    """The sandbox bank's known customers as its seed writes them (``KNOWN_CUSTOMERS`` in
    bank_simulator/services.py), read from the source (the portal's settings do not load the sandbox bank's
    models): identity number -> (kind, name, employees)."""
    tree = ast.parse((ROOT / "bank_simulator/services.py").read_text())
    (known,) = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "KNOWN_CUSTOMERS" for t in node.targets)
    ]
    customers = {}
    for call in known.elts:
        number, kind, name = (call.args[0].value, call.args[1].attr.lower(), call.args[2].value)
        employees = next((k.value.value for k in call.keywords if k.arg == "employees"), 0)
        customers[number] = (kind, name, employees)
    return customers


def test_the_sandbox_customers_table_is_the_sandbox_banks_seed():
    """Every customer the sandbox bank seeds is in the README's table with its identity number, kind and name,
    and no other number is; the number of signatures it states is the seed's rule (two below 5 employees)."""
    table = README[README.index("| sandbox customer | identity number |") :].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| ")]
    seeded = _seeded_customers()
    listed = {}
    for row in rows:
        who, number, kind, _accounts, purpose = (cell.strip() for cell in row.strip("|").split(" | "))
        listed[number.strip("`")] = (who, kind, purpose)
    assert set(listed) == set(seeded) and len(rows) == len(seeded)
    for number, (kind, name, employees) in seeded.items():
        who, listed_kind, purpose = listed[number]
        assert name in who and listed_kind == kind, number
        if kind == "corporate":
            signatures = "two signatures" if employees < 5 else "one signature"
            assert signatures in purpose, number
    assert "the second signer" in listed["20079518612"][2]
    rule = "signers_required=2 if spec.employees < 5 else 1"
    assert rule in (ROOT / "bank_simulator/services.py").read_text(), "the seed's rule of signatures changed"
