"""Writes of payments, one module per concern:

- ``drafts``: a reviewed, unsent payment (one per intent of the payment form) and its deletion;
- ``submission``: the one submission of a payment to the bank;
- ``initiation_call``: the initiation call (the first send and its replays) and what its answer is stored as;
- ``approval_steps``: what a bank's answer asks next (send the PSU to the bank, start the approval, or none);
- ``reconciliation``: what became of a lost answer (a replay in its window, then the account's transactions
  and staff);
- ``authorisation``: the start of a payment's approval (SCA) and what the bank's redirect back comes to;
- ``polling``: reading the payment's status from the bank until it is final;
- ``cancellation``: cancelling a payment at the bank;
- ``exchange_rates``: Norges Bank's daily rates and staff corrections (the NOK equivalent of an amount).
"""
