"""The default cache's own Redis connection, for the few operations the cache API cannot do in one
step (a rate limit's sliding log, a lock's compare-and-set): same pool, timeouts and database."""

from __future__ import annotations

from django.core.cache import cache


def redis_client():
    """The default cache's Redis connection (its pool, timeouts and database), or None if it is not Redis."""
    get_client = getattr(getattr(cache, "_cache", None), "get_client", None)
    return get_client(write=True) if get_client is not None else None


def serializer():
    """How the default Redis cache encodes values (Django's RedisSerializer: pickle, ints as digits), so
    that a value written with the raw client reads back with `cache.get` and the other way round."""
    return cache._cache._serializer
