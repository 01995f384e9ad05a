"""The offline path of the dependency audit: both lock files against a copy of the PyPA advisory database.

``make advisories`` asks PyPI's JSON API, which the development machines and CI cannot reach. The data PyPI
serves there is the PyPA advisory database (github.com/pypa/advisory-database): one OSV YAML file per advisory
under ``vulns/<package>/``. Given a copy of that repository taken elsewhere, this writes the same snapshot
pip-audit would (``--format json``), so tests/security/test_dependencies.py reads either the same way.

Run ``python -m devtools.advisories PATH/TO/advisory-database`` and record the database's commit and date in
``security/advisories/SOURCE.md``. It audits every pin of ``requirements.lock`` (runtime) and
``requirements-dev.lock`` (runtime + dev), each pinned version once, as ``make advisories`` does. A pinned
version is affected when an ``ECOSYSTEM`` range of the advisory contains it (``introduced`` <= version <
``fixed``, or <= ``last_affected``) or its ``versions`` list names it; withdrawn advisories are left out, as
PyPI leaves them out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", re.MULTILINE)


def in_ranges(version: Version, events: list[dict]) -> bool:
    """Whether one OSV ECOSYSTEM range contains the version.

    Each ``introduced`` opens an interval that the next ``fixed`` (excluded) or ``last_affected`` (included)
    closes; the database writes several such pairs in one range, not always in version order, so the pairs are
    read as written rather than sorted.
    """
    intervals, start = [], None
    for event in events:
        if "introduced" in event:
            if start is not None:
                intervals.append((start, None, False))
            start = event["introduced"]
        elif start is not None and ("fixed" in event or "last_affected" in event):
            closed = "last_affected" in event
            intervals.append((start, str(event.get("last_affected", event.get("fixed"))), closed))
            start = None
    if start is not None:
        intervals.append((start, None, False))
    return any(_within(version, lower, upper, closed=closed) for lower, upper, closed in intervals)


def _within(version: Version, lower, upper: str | None, *, closed: bool) -> bool:
    if str(lower) != "0" and version < Version(str(lower)):
        return False
    if upper is None:
        return True
    return version <= Version(upper) if closed else version < Version(upper)


def affects(advisory: dict, *, name: str, version: str) -> bool:
    """Whether the advisory applies to this pinned version of this package."""
    if advisory.get("withdrawn"):
        return False
    pinned = Version(version)
    for entry in advisory.get("affected", []):
        if canonicalize_name(entry.get("package", {}).get("name", "")) != name:
            continue
        if any(_same(pinned, listed) for listed in entry.get("versions", [])):
            return True
        ranges = [r for r in entry.get("ranges", []) if r.get("type") == "ECOSYSTEM"]
        if any(in_ranges(pinned, r.get("events", [])) for r in ranges):
            return True
    return False


def _same(pinned: Version, listed) -> bool:
    try:
        return Version(str(listed)) == pinned
    except InvalidVersion:
        return False


def fix_versions(advisory: dict, *, name: str) -> list[str]:
    """The ``fixed`` versions the advisory names for this package, as pip-audit lists them."""
    found = {
        str(event["fixed"])
        for entry in advisory.get("affected", [])
        if canonicalize_name(entry.get("package", {}).get("name", "")) == name
        for r in entry.get("ranges", [])
        if r.get("type") == "ECOSYSTEM"
        for event in r.get("events", [])
        if "fixed" in event
    }
    return sorted(found, key=Version)


LOCKS = (ROOT / "requirements.lock", ROOT / "requirements-dev.lock")


def pins(*lock_texts: str) -> list[tuple[str, str]]:
    """(canonical name, version) of every pin of the lock files, each pair once, sorted by name."""
    found = {(canonicalize_name(name), version) for text in lock_texts for name, version in PIN.findall(text)}
    return sorted(found)


def audit(*, database: Path, lock_texts: list[str]) -> dict:
    """pip-audit's JSON for every pin of the lock files, from the YAML files under ``database/vulns``."""
    folders = {canonicalize_name(folder.name): folder for folder in (database / "vulns").iterdir()}
    dependencies = []
    for name, version in pins(*lock_texts):
        vulns = []
        for path in sorted(folders[name].glob("*.yaml")) if name in folders else []:
            advisory = yaml.safe_load(path.read_text())
            if affects(advisory, name=name, version=version):
                vulns.append(
                    {
                        "id": advisory["id"],
                        "fix_versions": fix_versions(advisory, name=name),
                        "aliases": advisory.get("aliases", []),
                        "description": advisory.get("details", ""),
                    }
                )
        dependencies.append({"name": name, "version": version, "vulns": vulns})
    return {"dependencies": dependencies, "fixes": []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database", type=Path, help="a copy of github.com/pypa/advisory-database")
    parser.add_argument(
        "--lock", type=Path, action="append", help="a lock file (repeatable; default: both of the repository)"
    )
    parser.add_argument("--output", type=Path, default=ROOT / "security" / "advisories" / "pip-audit.json")
    args = parser.parse_args(argv)
    locks = args.lock or list(LOCKS)
    result = audit(database=args.database, lock_texts=[lock.read_text() for lock in locks])
    args.output.write_text(json.dumps(result))
    found = sum(len(d["vulns"]) for d in result["dependencies"])
    print(f"{len(result['dependencies'])} pins, {found} known vulnerabilities -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
