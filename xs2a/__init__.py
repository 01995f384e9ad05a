"""xs2a: a framework-free client for the bank's Berlin Group (NextGenPSD2 1.3) XS2A interface."""
