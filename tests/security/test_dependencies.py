"""The dependency audit, offline: requirements.lock against the advisory snapshot in security/advisories/.

``make advisories`` (needs PyPI) runs pip-audit over requirements.lock and saves its JSON answer as
``security/advisories/pip-audit.json``. This test reaches nothing outside the machine; it fails when
- the lock pins a package or version the snapshot has not audited (the lock changed: run ``make advisories``);
- the snapshot records a known vulnerability of a pinned version that ``accepted.toml`` does not accept, with a
  reason and an end date, or whose acceptance has expired;
- the snapshot could not audit some packages and ``accepted.toml`` does not say why (``[unaudited]``).
"""

from __future__ import annotations

import json
import re
import tomllib
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
ADVISORIES = ROOT / "security" / "advisories"


def locked(text: str) -> dict[str, str]:
    """name -> version of every pin of a pip-compile/uv lock file."""
    return {
        canonicalize_name(name): version
        for name, version in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", text, re.MULTILINE)
    }


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
    if unaudited:
        reason = accepted.get("unaudited", {})
        if not reason.get("reason") or not reason.get("until"):
            problems.append(f"not audited, and accepted.toml gives no [unaudited] reason: {', '.join(unaudited)}")
        elif date.fromisoformat(str(reason["until"])) < today:
            problems.append(f"the acceptance of unaudited packages ended on {reason['until']}: {len(unaudited)}")
    return problems


def test_the_lock_passes_the_audit_against_the_snapshot():
    lock = locked((ROOT / "requirements.lock").read_text())
    audited = snapshot(json.loads((ADVISORIES / "pip-audit.json").read_text()))
    accepted = tomllib.loads((ADVISORIES / "accepted.toml").read_text())
    assert len(lock) > 50  # the parser read the lock
    assert audit(lock, audited, accepted, datetime.now(UTC).date()) == []


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
    reason = {"unaudited": {"reason": "offline", "until": "2026-12-31"}}
    assert audit({"amqp": "5.4.2"}, audited, reason, TODAY) == []
    assert audit({"amqp": "5.4.2"}, audited, reason, date(2027, 1, 1)) != []


@pytest.mark.parametrize(
    ("line", "expected"),
    [("Django==5.2.19 \\", {"django": "5.2.19"}), ("psycopg[binary]==3.3.9", {}), ("  # via x", {})],
)
def test_lock_lines(line, expected):
    assert locked(line) == expected
