"""Writes of payments, one module per concern:

- ``initiation``: drafts, the one submission of a payment to the bank, reconciliation of a lost answer;
- ``authorisation``: the start of a payment's approval (SCA) and what the bank's redirect back comes to;
- ``polling``: reading the payment's status from the bank until it is final;
- ``cancellation``: cancelling a payment at the bank;
- ``exchange_rates``: Norges Bank's daily rates and staff corrections (the NOK equivalent of an amount).
"""
