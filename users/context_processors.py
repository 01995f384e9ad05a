from users.security import idle_warning_seconds


def idle_sign_out(request):
    """The idle sign-out's warning, read by static/js/idle_warning.js."""
    return {"IDLE_WARNING_SECONDS": idle_warning_seconds()}
