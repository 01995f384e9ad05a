"""The fault tests start the whole product as processes (tests/product.py); their marker is registered here."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "product: starts the whole product (bank, fault proxy, portal, worker, beat) as processes; slow",
    )
