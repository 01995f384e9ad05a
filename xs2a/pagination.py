"""Reading a listing page by page, following the bank's ``next`` links.

The bank pages transaction listings (200 items by default, spec 4.3) and names the following page in a
``next`` link relative to the base address. :class:`Pages` reads one page each time the iteration reaches it:

- the link is resolved against the base address (``BaseUrl.resolve``): a link to another host is a LinkError,
  and nothing is sent there;
- a link naming a page already read (a looping bank) is a LinkError, and more than ``max_pages`` pages an
  UnexpectedResponseError: a bank must not make the client spend calls forever;
- ``before_page(number)`` is called before each further page (2, 3, ...): the unattended refresh reserves one
  call of its budget there. It stops the iteration by returning False (``complete`` then stays False) or by
  raising (the exception reaches the caller).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from xs2a.errors import InvalidRequestError, LinkError, UnexpectedResponseError
from xs2a.psu import PsuContext

if TYPE_CHECKING:
    from xs2a.core import Requester

__all__ = ["DEFAULT_MAX_PAGES", "BeforePage", "Pages", "merge_pages"]

#: Pages a listing reads at most unless told otherwise (200 items each by default: 100 000 items).
DEFAULT_MAX_PAGES = 500

#: Called with the number of the page about to be read (2 for the second); False stops the iteration.
BeforePage = Callable[[int], "bool | None"]


class _Page(Protocol):
    booked: list[Any]
    pending: list[Any]

    @property
    def next_link(self) -> str | None: ...


P = TypeVar("P", bound=_Page)


class Pages(Generic[P]):
    """The pages of one listing, each read (one GET) when the iteration reaches it. Iterating again reads
    again from the first page. ``count``: pages read by the last iteration; ``complete``: it reached the page
    without a ``next`` link."""

    def __init__(
        self,
        requester: Requester,
        *,
        path: str,
        query: Mapping[str, str],
        psu: PsuContext,
        reader: Callable[[Any], P],
        what: str,
        before_page: BeforePage | None = None,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> None:
        if max_pages < 1:
            raise InvalidRequestError("max_pages must be at least 1")
        self._requester = requester
        self._path = path
        self._query = dict(query)
        self._psu = psu
        self._reader = reader
        self._what = what
        self._before_page = before_page
        self._max_pages = max_pages
        self.count = 0
        self.complete = False

    def __iter__(self) -> Iterator[P]:
        requester = self._requester
        self.count, self.complete = 0, False
        seen = {requester.base.url(self._path, self._query)}
        target: dict[str, Any] = {"path": self._path, "query": self._query}
        while True:
            page = requester.call("GET", reader=self._reader, psu=self._psu, **target)
            self.count += 1
            yield page
            href = page.next_link
            if not href:
                self.complete = True
                return
            url = requester.base.resolve(href)  # LinkError for another host: nothing is sent there
            if url in seen:
                raise LinkError(f"{self._what}: the next link repeats an earlier page ({href})")
            if self.count >= self._max_pages:
                raise UnexpectedResponseError(
                    f"{self._what}: more than {self._max_pages} pages; refusing to read on"
                )
            if self._before_page is not None and self._before_page(self.count + 1) is False:
                return
            seen.add(url)
            target = {"href": href}


def merge_pages(pages: Pages[P], item_id: Callable[[Any], str | None]) -> P:
    """Every page of ``pages`` as one record (its ``pages`` field says how many were read): booked items once
    per id, pending items (which the bank repeats on every page, spec 4.3 known issue) once per identical
    record."""
    booked: list[Any] = []
    pending: list[Any] = []
    booked_ids: set[str] = set()
    pending_seen: set[str] = set()
    last: P | None = None
    for page in pages:
        last = page
        for item in page.booked:
            key = item_id(item)
            if key is not None:
                if key in booked_ids:
                    continue
                booked_ids.add(key)
            booked.append(item)
        for item in page.pending:
            fingerprint = json.dumps(item.raw, sort_keys=True, default=str)
            if fingerprint in pending_seen:
                continue
            pending_seen.add(fingerprint)
            pending.append(item)
    assert last is not None  # a listing has at least its first page
    return replace(last, booked=booked, pending=pending, pages=pages.count)  # type: ignore[type-var]
