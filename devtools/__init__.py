"""Development-only tooling: nothing here runs in production."""
