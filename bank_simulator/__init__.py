"""The sandbox bank: a separate Django service that simulates the bank's XS2A interface.

It has its own settings (``bank_simulator.settings``) and database, and the portal reaches it only over HTTP.
Run its management commands with ``python -m bank_simulator <command>``.
"""
