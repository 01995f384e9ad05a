"""What a browser test counts as the portal's failures on a page: console errors (CSP violations included) of
the portal's own pages, and script errors. The bank's SCA screens are not the portal's (the sandbox bank serves
no favicon there, which chromium reports as an error)."""

from __future__ import annotations


def portal_problems(page, portal_url: str) -> list[str]:
    """From now on, collect the portal's console and script errors on ``page``, with where they came from.
    Returns the list, filled as the page goes on."""
    problems: list[str] = []

    def console(message) -> None:
        where = (message.location or {}).get("url", "")
        if message.type == "error" and where.startswith(portal_url):
            problems.append(f"{message.text} at {where}")

    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems
