"""The personas' password and how a test makes another user (tests/conftest.py's alice, bob and charlie)."""

PASSWORD = "correct horse battery staple"


def make_user(email, **extra):
    from tlsaudit.accounts.models import User  # at call time: this module is imported before Django is set up

    return User.objects.create_user(email=email, password=PASSWORD, email_verified=True, **extra)
