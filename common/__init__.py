"""What the portal and the sandbox bank share without depending on each other.

Two services live in this repository: the portal (``tpp_portal`` and its apps) and the sandbox bank
(``bank_simulator``). Neither may import the other, yet both read their settings from the environment the same
strict way. What they share lives here, and this package imports nothing of the repository, so that it stays a
leaf either service can use.

- ``envconfig``: the strict reader of the environment that both services' settings use.
"""
