"""The charts are the portal's own SVG (static/js/charts.js) rather than uPlot or Chart.js because the file the
portal ships is smaller than either library's minified build, plain and compressed (docs/charts.md). The
libraries' sizes are a fixture with its source (tests/fixtures/chart_libraries.json); the portal's file is
measured here as it is, unminified. If charts.js grows past a library, this fails and the choice is to be made
again. Its accessibility is checked in the browser (tests/browser/test_charts.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "chart_libraries.json").read_text())
SHIPPED = (ROOT / "static" / "js" / "charts.js").read_bytes()


def _library_size(name: str) -> tuple[int, int]:
    """Bytes of everything the library needs in the browser (script and stylesheet), plain and gzip -9."""
    files = FIXTURE["libraries"][name]["files"].values()
    return sum(f["bytes"] for f in files), sum(f["gzip_bytes"] for f in files)


def test_the_fixture_names_its_source():
    for library in FIXTURE["libraries"].values():
        assert library["tarball"].startswith("https://registry.npmjs.org/")
        assert library["integrity"].startswith("sha512-") and library["version"]
        assert all(name.endswith(".min.js") or name.endswith(".min.css") for name in library["files"])


@pytest.mark.parametrize("library", ["uPlot", "Chart.js"])
def test_the_shipped_charts_script_is_smaller_than_the_library(library):
    plain, compressed = _library_size(library)
    shipped_plain, shipped_compressed = len(SHIPPED), len(gzip.compress(SHIPPED, 9, mtime=0))

    assert shipped_plain < plain, f"charts.js is {shipped_plain} bytes, {library} minified {plain}"
    assert shipped_compressed < compressed, (
        f"charts.js is {shipped_compressed} bytes gzipped, {library} {compressed}"
    )
    # Printed for the record (pytest -s): how many times smaller.
    print(f"{library}: {plain / shipped_plain:.1f}x plain, {compressed / shipped_compressed:.1f}x gzip")
