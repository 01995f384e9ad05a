"""Payments of the sandbox bank (issue "bank_simulator, part 2"), a Django app inside the simulator.

- ``validation``: every rule of docs/bank-interface.md, spec 2.1-2.6 and 8 (one tppMessage per violation,
  path = field).
- ``tables``: currency, country and code lists, ISO 4217 minor units (``iso4217`` plus a documented table for
  listed codes ISO does not define) and the simulator's fixed NOK rates.
- ``services``: initiation (logical duplicates, fees, idempotent X-Request-ID replay, single SCA),
  startAuthorisation, signatures (multi-signature agreements: PATC), cancellation; ``payment_move`` is the one
  way a status changes, each change a ``PaymentEvent``.
- ``engine`` and ``schedule``: batches five times a day on the business clock (RCVD -> PDNG -> ACTC/ACSP/ACCP
  -> ACSC, or ACCC, or RJCT); ``payment_batches`` management command; ``POST /v1/sandbox/batches/run``.
- ``sca``: the PAYMENT purpose of part 1's SCA screens (dynamic linking), registered from ``apps.PisConfig``.
- ``lost_answers``: initiation answers lost after the payment is stored (BANK_SIM_DROP_PAYMENT_ANSWER, and the
  sandbox's arming of the next one), lost by the WSGI middleware ``bank_simulator.wsgi`` runs.
- The domestic product's known issue (details and status unreadable before approval) is reproduced in
  ``views``.
"""
