# The sandbox bank as a real process (session), and `live_bank` pointing the portal's client at it.
from tests.live_bank import live_bank, live_bank_server  # noqa: F401
