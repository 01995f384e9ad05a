"""The sandbox bank: a separate Django service that simulates the bank's XS2A interface.

It has its own settings (``bank_simulator.settings``) and database, and the portal reaches it only over HTTP.
Run its management commands with ``python -m bank_simulator <command>`` (``sandbox_initialize [--if-empty]``
resets to the known state of docs/bank-interface.md, reference 1).

Where things are:

- ``access``: the ``@endpoint`` decorator every /v1 operation goes through: signature (``security.httpsig``;
  (request-target) always signed, psu-id and psu-corporate-id whenever sent, replays refused by
  ``security.replay``), certificate, chain and PSD2 role (``security.certificates``), required headers, JSON
  only, PSU headers.
- ``views/``: ``ais`` (accounts, balances, transactions, card accounts), ``consents`` (bank-offered consents,
  /v1/users, /v1/agreements), ``sandbox`` (mock data, clock), ``sca`` (the PSU's HTML screens), ``openapi``.
- ``sca_purposes``: what an SCA approves, one handler per purpose (``sca_handlers``: consents and identification;
  payments add theirs, with dynamic linking).
- ``services`` (writes), ``selectors`` (reads), ``history`` (generated transactions),
  ``clock`` (business time = real time + a stored offset), ``errors`` (tppMessages, section 7 codes only).

Settings (environment; the README's sandbox bank table and docs/sandbox-bank.md say what each does):
BANK_SIM_DATABASE_URL, BANK_SIM_PUBLIC_URL, BANK_SIM_TRUSTED_CAS, BANK_SIM_SECRET_KEY, BANK_SIM_SANDBOX,
BANK_SIM_KNOWN_ISSUE_PENDING_UNFILTERED, BANK_SIM_SEED, BANK_SIM_DATE_TOLERANCE (also the replay window),
BANK_SIM_SCA_TTL, BANK_SIM_SIGN_RESPONSES with BANK_SIM_SIGNING_CERT and BANK_SIM_SIGNING_KEY,
BANK_SIM_CONN_MAX_AGE, and where the specification is silent: BANK_SIM_CONSENT_DELETE,
BANK_SIM_REQUEST_ID_REPLAY, BANK_SIM_SCA_EXEMPT_BELOW, BANK_SIM_SCA_AT_INITIATION, BANK_SIM_MAX_PAGE,
BANK_SIM_LATENCY_MS, BANK_SIM_BATCH_TIMES.
"""
