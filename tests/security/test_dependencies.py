"""The dependency audit, offline: both lock files against the advisory snapshot in security/advisories/.

``requirements.lock`` holds the runtime pins (the Docker image installs it), ``requirements-dev.lock`` the runtime
and development pins (``make venv`` installs it); ``make lock`` writes both. ``make advisories`` (needs PyPI)
runs pip-audit over both and saves its JSON answer as ``security/advisories/pip-audit.json``; where PyPI's
advisory API is unreachable the same JSON is written from a copy of the PyPA advisory database
(``security/advisories/SOURCE.md`` says which). This test reaches nothing outside the machine; it fails when
- the two lock files disagree: a runtime pin missing from the development lock or at another version or with
  other hashes, a development tool in the runtime lock, a runtime dependency of pyproject.toml not pinned;
- a lock pins a package or version the snapshot has not audited (a lock changed: run ``make advisories``);
- the snapshot records a known vulnerability of a pinned version that ``accepted.toml`` does not accept, with a
  reason and an end date, or whose acceptance has expired;
- the snapshot could not audit some packages and ``accepted.toml`` does not name them under ``[unaudited]``, with
  a reason and an end date; or names there a package the snapshot did audit (the acceptance must stay narrow).
"""

from __future__ import annotations

import json
import re
import tomllib
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from devtools.advisories import affects, in_ranges, pins
from devtools.advisories import audit as offline_audit

ROOT = Path(__file__).resolve().parents[2]
ADVISORIES = ROOT / "security" / "advisories"
RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def locked(text: str) -> dict[str, str]:
    """name -> version of every pin of a pip-compile/uv lock file."""
    return {
        canonicalize_name(name): version
        for name, version in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", text, re.MULTILINE)
    }


def hashes(text: str) -> dict[str, set[str]]:
    """name -> the --hash values of its pin, for every pin of a lock file written with --generate-hashes."""
    found = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", block)
        if match:
            found[canonicalize_name(match.group(1))] = set(re.findall(r"--hash=(sha256:[0-9a-f]{64})", block))
    return found


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(line).name) for line in requirements}


def snapshot(data: dict) -> dict[str, dict]:
    """name -> {"version", "vulns", "unaudited"} from pip-audit's JSON."""
    found = {}
    for dependency in data["dependencies"]:
        name = canonicalize_name(dependency["name"])
        version = dependency.get("version")
        if version is None:  # skipped: the version is only in the reason, "... (5.4.2)"
            match = re.search(r"\(([^()]+)\)\s*$", dependency.get("skip_reason", ""))
            version = match.group(1) if match else None
        found[name] = {
            "version": version,
            "vulns": dependency.get("vulns", []),
            "unaudited": "skip_reason" in dependency,
        }
    return found


def audit(lock: dict[str, str], audited: dict[str, dict], accepted: dict, today: date) -> list[str]:
    """Every problem, as a sentence; empty when the lock passes."""
    problems = []
    for name, version in sorted(lock.items()):
        entry = audited.get(name)
        if entry is None or entry["version"] != version:
            seen = entry["version"] if entry else "absent"
            problems.append(f"{name}=={version} is not in the snapshot ({seen}): run `make advisories`")
    accepted_ids = {}
    for item in accepted.get("vulnerability", []):
        if not item.get("reason") or not item.get("until"):
            problems.append(f"accepted {item.get('id')}: a reason and an end date (until) are required")
        accepted_ids[(canonicalize_name(item.get("package", "")), item.get("id"))] = item
    for name, entry in sorted(audited.items()):
        if name not in lock:
            continue
        for vuln in entry["vulns"]:
            ids = {vuln["id"], *vuln.get("aliases", [])}
            match = next((accepted_ids[(name, i)] for i in ids if (name, i) in accepted_ids), None)
            fixes = ", ".join(vuln.get("fix_versions", [])) or "none yet"
            if match is None:
                problems.append(f"{name}=={entry['version']}: {vuln['id']} (fixed in {fixes})")
            elif date.fromisoformat(str(match["until"])) < today:
                problems.append(f"{name}: the acceptance of {vuln['id']} ended on {match['until']}")
    unaudited = sorted(name for name, entry in audited.items() if entry["unaudited"] and name in lock)
    reason = accepted.get("unaudited", {})
    listed = {canonicalize_name(name) for name in reason.get("packages", [])}
    if unaudited:
        unlisted = [name for name in unaudited if name not in listed]
        if not reason.get("reason") or not reason.get("until"):
            problems.append(f"not audited, and accepted.toml gives no [unaudited] reason: {', '.join(unaudited)}")
        elif date.fromisoformat(str(reason["until"])) < today:
            problems.append(f"the acceptance of unaudited packages ended on {reason['until']}: {len(unaudited)}")
        elif unlisted:
            problems.append(f"not audited, and not in accepted.toml's [unaudited] packages: {', '.join(unlisted)}")
    # An acceptance wider than the gap would let a package that stops being audited pass unnoticed.
    covered = sorted(name for name in listed if name in audited and not audited[name]["unaudited"])
    if covered:
        problems.append(f"accepted.toml's [unaudited] names audited packages, remove them: {', '.join(covered)}")
    return problems


@pytest.mark.parametrize("lock_file", [RUNTIME_LOCK, DEV_LOCK], ids=lambda path: path.name)
def test_each_lock_passes_the_audit_against_the_snapshot(lock_file):
    lock = locked(lock_file.read_text())
    audited = snapshot(json.loads((ADVISORIES / "pip-audit.json").read_text()))
    accepted = tomllib.loads((ADVISORIES / "accepted.toml").read_text())
    assert len(lock) > 50  # the parser read the lock
    assert audit(lock, audited, accepted, datetime.now(UTC).date()) == []


# --- the two lock files ----------------------------------------------------------------------------------------


def test_the_runtime_lock_is_the_runtime_part_of_the_development_lock():
    runtime, dev = RUNTIME_LOCK.read_text(), DEV_LOCK.read_text()
    runtime_pins, dev_pins = locked(runtime), locked(dev)
    assert len(runtime_pins) > 50 and len(dev_pins) > len(runtime_pins)
    other = {name: (version, dev_pins.get(name)) for name, version in runtime_pins.items()}
    assert {name: pair for name, pair in other.items() if pair[0] != pair[1]} == {}
    runtime_hashes, dev_hashes = hashes(runtime), hashes(dev)
    assert set(runtime_hashes) == set(runtime_pins) and set(dev_hashes) == set(dev_pins)
    for name, values in runtime_hashes.items():
        assert values and values == dev_hashes[name], f"{name}: the two locks pin other files"


def test_the_runtime_lock_pins_every_runtime_dependency_and_no_development_tool():
    runtime_pins = locked(RUNTIME_LOCK.read_text())
    runtime_names = names(PROJECT["dependencies"])
    assert runtime_names - set(runtime_pins) == set()
    # The dev extra's own packages, and the heavy ones they bring (locust: flask, gevent).
    development = names(PROJECT["optional-dependencies"]["dev"]) - runtime_names
    assert {"pytest", "playwright", "locust", "schemathesis"} <= development
    assert sorted((development | {"flask", "gevent", "greenlet", "pytest-django"}) & set(runtime_pins)) == []
    assert development <= set(locked(DEV_LOCK.read_text()))


def test_the_lock_files_say_how_make_lock_wrote_them():
    makefile = (ROOT / "Makefile").read_text()
    for lock_file, extra in ((RUNTIME_LOCK, False), (DEV_LOCK, True)):
        command = re.search(r"^#\s+(uv pip compile .*)$", lock_file.read_text(), re.M).group(1)
        assert "--generate-hashes" in command and f"-o {lock_file.name}" in command
        assert ("--extra dev" in command) is extra, command
        assert f"-o {lock_file.name}" in makefile
    assert "--constraint requirements-dev.lock" in RUNTIME_LOCK.read_text().splitlines()[1]


# --- the audit itself, on made-up snapshots -------------------------------------------------------------------

TODAY = date(2026, 11, 23)
VULN = {"id": "PYSEC-2026-1", "aliases": ["CVE-2026-0001"], "fix_versions": ["5.2.20"], "description": "..."}


def _snapshot(*dependencies):
    return snapshot({"dependencies": list(dependencies), "fixes": []})


def test_a_known_vulnerability_fails_until_accepted_with_a_reason():
    lock = {"django": "5.2.19"}
    audited = _snapshot({"name": "Django", "version": "5.2.19", "vulns": [VULN]})
    assert audit(lock, audited, {}, TODAY) == ["django==5.2.19: PYSEC-2026-1 (fixed in 5.2.20)"]
    accepted = {
        "vulnerability": [{"id": "CVE-2026-0001", "package": "django", "reason": "unused", "until": "2026-12-01"}]
    }
    assert audit(lock, audited, accepted, TODAY) == []
    assert audit(lock, audited, accepted, date(2026, 12, 2)) == [
        "django: the acceptance of PYSEC-2026-1 ended on 2026-12-01"
    ]
    no_reason = {"vulnerability": [{"id": "PYSEC-2026-1", "package": "django", "until": "2026-12-01"}]}
    assert audit(lock, audited, no_reason, TODAY)[0].startswith("accepted PYSEC-2026-1: a reason")


def test_a_lock_that_moved_on_needs_a_new_snapshot():
    audited = _snapshot({"name": "django", "version": "5.2.18", "vulns": []})
    assert audit({"django": "5.2.19", "requests": "2.34.2"}, audited, {}, TODAY) == [
        "django==5.2.19 is not in the snapshot (5.2.18): run `make advisories`",
        "requests==2.34.2 is not in the snapshot (absent): run `make advisories`",
    ]


def test_unaudited_packages_need_a_stated_reason():
    audited = _snapshot(
        {"name": "amqp", "skip_reason": "Dependency not found on PyPI and could not be audited: amqp (5.4.2)"}
    )
    assert audit({"amqp": "5.4.2"}, audited, {}, TODAY) == [
        "not audited, and accepted.toml gives no [unaudited] reason: amqp"
    ]
    reason = {"unaudited": {"packages": ["AMQP"], "reason": "offline", "until": "2026-12-31"}}
    assert audit({"amqp": "5.4.2"}, audited, reason, TODAY) == []
    assert audit({"amqp": "5.4.2"}, audited, reason, date(2027, 1, 1)) != []
    other = {"unaudited": {"packages": ["django"], "reason": "offline", "until": "2026-12-31"}}
    assert audit({"amqp": "5.4.2"}, audited, other, TODAY) == [
        "not audited, and not in accepted.toml's [unaudited] packages: amqp"
    ]


def test_the_unaudited_acceptance_names_no_audited_package():
    audited = _snapshot({"name": "amqp", "version": "5.4.2", "vulns": []})
    reason = {"unaudited": {"packages": ["amqp"], "reason": "offline", "until": "2026-12-31"}}
    assert audit({"amqp": "5.4.2"}, audited, reason, TODAY) == [
        "accepted.toml's [unaudited] names audited packages, remove them: amqp"
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [("Django==5.2.19 \\", {"django": "5.2.19"}), ("psycopg[binary]==3.3.9", {}), ("  # via x", {})],
)
def test_lock_lines(line, expected):
    assert locked(line) == expected


# --- the offline path: devtools.advisories, on a made-up copy of the PyPA database -------------------------------

ADVISORY = """
id: PYSEC-2023-212
aliases: [CVE-2023-45803]
details: redirect keeps the body
affected:
- package: {name: urllib3, ecosystem: PyPI}
  ranges:
  - type: GIT
    events: [{introduced: "0"}, {fixed: 4e98d57809dacab1cbe625fddeec1a290c478ea9}]
  - type: ECOSYSTEM
    events: [{introduced: 2.0.0}, {fixed: 2.0.7}, {introduced: "0"}, {fixed: 1.26.18}]
"""


@pytest.mark.parametrize(
    ("version", "expected"),
    [("1.26.17", True), ("1.26.18", False), ("2.0.0", True), ("2.0.6", True), ("2.0.7", False), ("2.8.0", False)],
)
def test_a_range_of_unsorted_pairs(version, expected):
    events = [{"introduced": "2.0.0"}, {"fixed": "2.0.7"}, {"introduced": "0"}, {"fixed": "1.26.18"}]
    assert in_ranges(Version(version), events) is expected


def test_open_and_last_affected_ranges():
    assert in_ranges(Version("99.0"), [{"introduced": "0"}])
    assert in_ranges(Version("4.0.1"), [{"introduced": "4.0"}, {"last_affected": "4.0.1"}])
    assert not in_ranges(Version("4.0.2"), [{"introduced": "4.0"}, {"last_affected": "4.0.1"}])


def test_withdrawn_advisories_and_listed_versions():
    advisory = {"affected": [{"package": {"name": "Redis"}, "versions": ["4.5.5"], "ranges": []}]}
    assert affects(advisory, name="redis", version="4.5.5")
    assert not affects(advisory, name="redis", version="4.5.6")
    assert not affects(advisory, name="flask", version="4.5.5")
    assert not affects({**advisory, "withdrawn": "2023-06-06T10:37:00Z"}, name="redis", version="4.5.5")


def test_the_offline_snapshot_fails_the_audit_like_pip_audits(tmp_path):
    (tmp_path / "vulns" / "urllib3").mkdir(parents=True)
    (tmp_path / "vulns" / "urllib3" / "PYSEC-2023-212.yaml").write_text(ADVISORY)
    data = offline_audit(database=tmp_path, lock_texts=["urllib3==2.0.6 \\\nidna==3.20 \\\n"])
    assert data["dependencies"][1]["vulns"][0]["fix_versions"] == ["1.26.18", "2.0.7"]
    assert data["dependencies"][0] == {"name": "idna", "version": "3.20", "vulns": []}
    lock = {"urllib3": "2.0.6", "idna": "3.20"}
    assert audit(lock, snapshot(data), {}, TODAY) == ["urllib3==2.0.6: PYSEC-2023-212 (fixed in 1.26.18, 2.0.7)"]


def test_the_offline_snapshot_covers_every_lock_file_once_per_pinned_version(tmp_path):
    (tmp_path / "vulns" / "urllib3").mkdir(parents=True)
    (tmp_path / "vulns" / "urllib3" / "PYSEC-2023-212.yaml").write_text(ADVISORY)
    runtime = "Django==5.2.19 \\\nurllib3==2.8.0 \\\n"
    dev = "django==5.2.19 \\\npytest==9.2.0 \\\nurllib3==2.0.6 \\\n"
    assert pins(runtime, dev) == [
        ("django", "5.2.19"),
        ("pytest", "9.2.0"),
        ("urllib3", "2.0.6"),
        ("urllib3", "2.8.0"),
    ]
    data = offline_audit(database=tmp_path, lock_texts=[runtime, dev])
    assert [(d["name"], d["version"], len(d["vulns"])) for d in data["dependencies"]] == [
        ("django", "5.2.19", 0),
        ("pytest", "9.2.0", 0),
        ("urllib3", "2.0.6", 1),
        ("urllib3", "2.8.0", 0),
    ]
