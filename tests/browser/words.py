"""What counts as English on a bokmål page (the page tour, tests/browser/test_tour.py): every visible word is
checked against a list of English words that are not also Norwegian ones.

What a page may show in English is allowed by where it stands or by name: codes and identifiers (``<code>``,
``<pre>``, ``translate="no"``), the names of the product, the people and the companies in the data, and the
language switcher's "English".
"""

from __future__ import annotations

import re

#: English words that are not Norwegian words too (so "for", "at", "bank", "time", "all", "sent", "last", "type",
#: "filter", "skip" and "private" ("denne private bankforbindelsen") are left out).
ENGLISH = set(
    """
    the and of not yet with your you this that these those are was were will would should could cannot can't don't
    please enter required field fields account accounts payment payments balance balances refresh refreshes
    available booked pending expected authorised consent consented consents connection connections connect
    disconnect sign signed password email address details detail show hide view select change add delete save
    search home dashboard calls call errors error duration customer customers new reset create sandbox
    clock batch batches name number amount yes none today tomorrow yesterday left next planned rule
    automatic unattended limit reached resume waiting final completed cancelled rejected refused
    certificate certificates valid until expires expired expiry days day hours hour only when where what who
    which there their they it's its into than then also less used use each every any from
    bank's payer creditor debtor reference message messages history overview settings language menu
    content help back cancel confirm submit approve review draft drafts edit export download log logs audit
    operation operations state states percentile rates exchange fee fees request requests answer
    answers link links marked reconnect reconnection reconnecting agreement agreements engagement
    engagements transaction transactions mock copy while away updates update shows how many
    welcome about administration site recent actions action group groups user users permissions staff
    superuser active first joined date since ago within without between after before again corporate
    """.split()
)
#: Words of the data and the product shown as they are, in any language.
ALLOWED = {"fjordpay", "english", "brukskonto", "sparekonto"}
#: Names of several words that are the same in bokmål (a country of the payment form's list).
ALLOWED_NAMES = ("New Zealand",)
#: What a page shows as code or as it was sent: left out of the check.
VISIBLE_TEXT = """
() => {
  const skip = 'code, pre, kbd, samp, [translate="no"], script, style, noscript, template';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [document.title];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip)) continue;
    const style = getComputedStyle(parent);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    if (parent.closest('details:not([open])') && !parent.closest('summary')) continue;
    out.push(node.textContent);
  }
  for (const e of document.querySelectorAll('input[type=submit], input[type=button], [aria-label], [title]')) {
    if (e.closest(skip)) continue;
    out.push(e.value || '', e.getAttribute('aria-label') || '', e.getAttribute('title') || '');
  }
  return out.join('\\n');
}
"""


def english_words(text: str) -> list[str]:
    """The English words of ``text``; paths (/v1/accounts), hyphenated codes (X-Request-ID) and letters run
    together with digits (the "add" of an X-Request-ID 5add3f0e-...) are not words."""
    for name in ALLOWED_NAMES:
        text = text.replace(name, "")
    text = re.sub(r"\S*/\S*", " ", text)
    found = re.findall(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z'-]*(?![A-Za-z0-9])", text)
    words = [word for word in found if "-" not in word]
    return sorted({word for word in words if word.lower() in ENGLISH and word.lower() not in ALLOWED})
