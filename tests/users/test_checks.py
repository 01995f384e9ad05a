"""The session rules cannot be switched off by a settings slip: system checks name the mistake."""

from users.checks import ACTIVITY_MIDDLEWARE, check_session_security


def test_the_project_settings_pass():
    assert check_session_security() == []


def test_a_missing_activity_middleware_is_an_error(settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != ACTIVITY_MIDDLEWARE]
    assert [e.id for e in check_session_security()] == ["users.E001"]


def test_the_activity_middleware_must_follow_authentication(settings):
    settings.MIDDLEWARE = [ACTIVITY_MIDDLEWARE, *(m for m in settings.MIDDLEWARE if m != ACTIVITY_MIDDLEWARE)]
    assert [e.id for e in check_session_security()] == ["users.E002"]
