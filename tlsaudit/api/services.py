from tlsaudit.api import keys
from tlsaudit.api.models import ApiKey


def create_key(org, *, name: str, scope: str, created_by=None, rate_per_minute: int | None = None):
    """(row, plaintext): the plaintext exists only in the caller's hands from here on."""
    new = keys.generate(scope)
    key = ApiKey.objects.create(organization=org, name=name, scope=scope, rate_per_minute=rate_per_minute,
                                lookup=new.lookup, digest=new.digest, created_by=created_by)
    return key, new.plaintext
