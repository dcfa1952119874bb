"""Target locks (tlsaudit.core.locks) against hostile interleavings, on the real Redis of `make test`,
through two real connections: the cache's own (the lock's users) and a second one (the others: a
run that took the lock after it expired, a taker racing this one). An interleaving is played by
running the two halves of an operation (what it read, then its one atomic change) with the other
connection acting in between: exactly the window a slow or paused process leaves."""

import os
import socket
import subprocess
import sys
import threading
from contextlib import suppress
from urllib.parse import urlparse

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError, ResponseError

from tlsaudit.core import locks, runners
from tlsaudit.core.rediscache import redis_client, serializer
from workers.tasks import gate

KEYS = locks.keys("scan", "192.0.2.10", [443, 8443])
LEASE = 600


@pytest.fixture(autouse=True)
def _no_locks_left():
    cache.delete_many(KEYS)
    yield
    cache.delete_many(KEYS)


@pytest.fixture
def other():
    """A second, independent connection to the same Redis database: the other processes."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    yield client
    client.close()


def dead_holder(row_id: int) -> str:
    """A holder whose process really ran and really died (a SIGKILLed pool child)."""
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as process:
        holder = locks.holder_for(row_id, f"{runners.pid_space()} {process.pid} {runners.start_time(process.pid)}")
        process.kill()
    assert locks.holder_is_gone(holder)
    return holder


def live_holder(row_id: int) -> str:
    return locks.holder_for(row_id, runners.this_process())


def held_by(lock: str, client) -> object:
    raw = client.get(cache.make_key(lock))
    return None if raw is None else serializer().loads(raw)


def store():
    locks_store = locks.store_of_cache()
    assert isinstance(locks_store, locks.RedisLocks)  # the product's cache: Redis, not the file cache
    return locks_store


# --- 1. taking over a dead holder's lock --------------------------------------------------------

def test_a_dead_holders_lock_is_taken_over_at_once_and_a_live_ones_is_not():
    assert locks.take(KEYS, dead_holder(1), LEASE)
    assert locks.take(KEYS, live_holder(2), LEASE)          # its process died: no lease to wait out
    assert not locks.take(KEYS, live_holder(3), LEASE)      # its process lives
    assert cache.get(KEYS[0]) == cache.get(KEYS[1]) == live_holder(2)


def test_two_takers_of_a_dead_holders_lock_cannot_both_take_it(other):
    assert locks.take(KEYS, dead_holder(1), LEASE)
    first, second = live_holder(2), live_holder(3)
    # Both read the lock while its holder is dead and both decide to take it over...
    seen_by_first, seen_by_second = store().read(KEYS), store().read(KEYS)
    assert all(locks.holder_is_gone(value) for value, _ in seen_by_first + seen_by_second)
    # ...the first one's change goes through; the second's finds the lock no longer as it read it.
    assert store().take(KEYS, first, LEASE, [seen for _, seen in seen_by_first])
    assert not store().take(KEYS, second, LEASE, [seen for _, seen in seen_by_second])
    assert held_by(KEYS[0], other) == held_by(KEYS[1], other) == first


def test_a_take_over_never_deletes_a_lock_re_taken_live_between_its_read_and_its_change(other):
    assert locks.take(KEYS, dead_holder(1), LEASE)
    seen = [raw for _, raw in store().read(KEYS)]          # read: dead, to be taken over
    # Meanwhile the dead holder's lease ran out and another run took the lock (through the other connection).
    other.delete(*[cache.make_key(lock) for lock in KEYS])
    live = live_holder(4)
    for lock in KEYS:
        other.set(cache.make_key(lock), serializer().dumps(live), ex=LEASE)
    assert not store().take(KEYS, live_holder(5), LEASE, seen)
    assert held_by(KEYS[0], other) == held_by(KEYS[1], other) == live


def test_many_takers_at_once_of_a_dead_holders_lock_make_one_owner():
    # Real concurrency too: processes racing for the same dead holder's lock, each on its own connection,
    # each let go by a line on its stdin once all are started, and alive until all have answered (a
    # winner that exited would be a dead holder, rightly taken over by a later racer). Their start-ups
    # stagger them, so this rarely hits the window; the played interleavings above are what defeat it.
    assert locks.take(KEYS, dead_holder(1), LEASE)
    racer = ("import django, sys; django.setup(); from tlsaudit.core import locks, runners; "
             f"sys.stdin.readline(); print(locks.take({KEYS!r}, locks.holder_for(sys.argv[1], "
             f"runners.this_process()), {LEASE}), flush=True); sys.stdin.readline()")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tlsaudit.settings"}
    racers = [subprocess.Popen([sys.executable, "-c", racer, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env) for n in range(10, 14)]
    for process in racers:
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.stdout.readline().strip() for process in racers]
    holders = [cache.get(lock) for lock in KEYS]
    for process in racers:
        process.stdin.close()
    assert [process.wait(timeout=60) for process in racers] == [0] * len(racers)
    assert sorted(outputs) == ["False"] * 3 + ["True"]
    winner = str(10 + outputs.index("True"))
    assert holders[0].split(" ")[0] == holders[1].split(" ")[0] == winner


def test_a_take_that_redis_runs_twice_takes_and_another_with_the_same_read_does_not():
    # redis-py sends a command again when the connection broke before its reply: the second run of the
    # script finds the lock already this take's (gate.holder_of makes each take's holder its own).
    mine, yours = gate.holder_of(18), gate.holder_of(18)      # two deliveries of one row in one process
    assert mine != yours and locks.holder_is_gone(mine) is False
    seen = [raw for _, raw in store().read(KEYS)]
    assert store().take(KEYS, mine, LEASE, seen)
    assert store().take(KEYS, mine, LEASE, seen)              # the same script, run again
    assert not store().take(KEYS, yours, LEASE, seen)         # the other delivery, which read the same
    locks.release(KEYS, yours)                                # its release frees nothing of mine
    assert cache.get(KEYS[0]) == cache.get(KEYS[1]) == mine


# --- 3. several keys: all or none, also when Redis fails on the second --------------------------

def test_a_redis_error_on_the_second_key_leaves_the_first_free(other):
    # The second key is not a lock (another type of value): Redis refuses to read it, mid-take.
    other.rpush(cache.make_key(KEYS[1]), "not a lock")
    holder = live_holder(6)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        locks.take(KEYS, holder, LEASE)
    assert other.get(cache.make_key(KEYS[0])) is None        # nothing left locked until its lease ends
    other.delete(cache.make_key(KEYS[1]))
    assert locks.take(KEYS, holder, LEASE)                   # and the next try takes both


class ReplyLosingRelay:
    """A TCP relay to the test Redis that, once armed, lets the first write command (SET or EVALSHA)
    reach Redis and run, then drops the connection instead of its reply: the network failing mid-take,
    after Redis acted. Later connections pass through."""

    WRITES = (b"\r\nSET\r\n", b"\r\nEVALSHA\r\n", b"\r\nEVAL\r\n")

    def __init__(self, host: str, port: int):
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.armed = self.dropped = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            wrote = threading.Event()
            threading.Thread(target=self.pump, args=(client, server, wrote, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, wrote, False), daemon=True).start()

    def pump(self, source, sink, wrote, requests: bool):
        with suppress(OSError):
            while data := source.recv(65536):
                if requests and any(write in data for write in self.WRITES):
                    wrote.set()
                if not requests and self.armed and wrote.is_set() and not data.startswith(b"-NOSCRIPT"):
                    self.armed, self.dropped = False, True
                    break  # Redis ran the write; its reply never arrives
                if not requests:
                    wrote.clear()
                sink.sendall(data)
        for end in (source, sink):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.listener.close()


def test_a_take_whose_reply_is_lost_after_redis_ran_it_leaves_nothing_locked(settings, other):
    url = urlparse(settings.REDIS_URL)
    relay = ReplyLosingRelay(url.hostname, url.port or 6379)
    settings.CACHES = {"default": {**settings.CACHES["default"],
                                   "LOCATION": f"redis://127.0.0.1:{relay.port}{url.path}"}}
    try:
        holder = live_holder(19)
        relay.armed = True
        with pytest.raises(RedisError):
            locks.take(KEYS, holder, LEASE)
        assert relay.dropped
        # The take ran in Redis, then its holder freed what it might hold before raising.
        assert other.exists(*[cache.make_key(lock) for lock in KEYS]) == 0
        assert locks.take(KEYS, holder, LEASE)
    finally:
        relay.close()


def test_a_key_held_by_a_live_run_leaves_the_other_keys_untaken(other):
    assert locks.take(KEYS[1:], live_holder(7), LEASE)
    assert not locks.take(KEYS, live_holder(8), LEASE)
    assert other.get(cache.make_key(KEYS[0])) is None


# --- 4. release and heartbeat act only on a lock still held by the one who acts -------------------

def re_taken_by_another(other, lease: int = LEASE) -> str:
    """The lock expired and another run took it, through the other connection."""
    another = live_holder(9)
    for lock in KEYS:
        other.set(cache.make_key(lock), serializer().dumps(another), ex=lease)
    return another


def test_an_old_holder_cannot_release_a_lock_re_taken_between_its_read_and_its_delete(other):
    mine = live_holder(10)
    assert locks.take(KEYS, mine, LEASE)
    read = store().read(KEYS)
    assert [value for value, _ in read] == [mine, mine]      # read: still mine, to be deleted
    another = re_taken_by_another(other)
    assert store().act_if_held("release", KEYS, [seen for _, seen in read], 0, "", False) == 0
    assert held_by(KEYS[0], other) == held_by(KEYS[1], other) == another


def test_an_old_holder_cannot_extend_a_lock_re_taken_between_its_read_and_its_expire(other):
    mine = live_holder(11)
    assert locks.take(KEYS, mine, 5)
    read = store().read(KEYS)
    re_taken_by_another(other, lease=30)
    assert store().act_if_held("extend", KEYS, [seen for _, seen in read], LEASE, "", False) == 0
    assert all(0 < other.ttl(cache.make_key(lock)) <= 30 for lock in KEYS)


def test_release_and_heartbeat_leave_another_runs_lock_alone(other):
    assert locks.take(KEYS, live_holder(12), 5)
    another = re_taken_by_another(other, lease=30)
    locks.release(KEYS, live_holder(12))
    assert locks.extend(KEYS, live_holder(12), LEASE) == 0
    assert held_by(KEYS[0], other) == held_by(KEYS[1], other) == another
    assert all(0 < other.ttl(cache.make_key(lock)) <= 30 for lock in KEYS)


def test_release_frees_and_heartbeat_extends_the_holders_own_lock(other):
    mine = live_holder(13)
    assert locks.take(KEYS, mine, 30)
    assert locks.extend(KEYS, mine, LEASE) == 2
    assert all(other.ttl(cache.make_key(lock)) > 30 for lock in KEYS)
    locks.release(KEYS, mine)
    assert other.exists(*[cache.make_key(lock) for lock in KEYS]) == 0


def test_a_hand_over_is_all_or_none(other):
    mine = live_holder(14)
    assert locks.take(KEYS, mine, LEASE)
    other.set(cache.make_key(KEYS[1]), serializer().dumps(live_holder(15)), ex=LEASE)   # one was lost meanwhile
    assert not locks.hand_over(KEYS, mine, locks.holder_for(14), LEASE)
    assert held_by(KEYS[0], other) == mine                   # not half handed over
    other.set(cache.make_key(KEYS[1]), serializer().dumps(mine), ex=LEASE)
    assert locks.hand_over(KEYS, mine, locks.holder_for(14), LEASE)
    assert held_by(KEYS[0], other) == held_by(KEYS[1], other) == "14"
    assert not locks.take(KEYS, live_holder(16), LEASE)      # a run's own lock is never "gone"


def test_a_value_this_code_did_not_write_is_held_by_nobody_it_can_judge(other):
    other.set(cache.make_key(KEYS[0]), b"\x80garbage", ex=LEASE)
    assert not locks.take(KEYS, live_holder(17), LEASE)
    assert other.get(cache.make_key(KEYS[0])) == b"\x80garbage"


# --- development's file cache: the same rules, one flock for all its processes -----------------------

@pytest.fixture
def file_cache(settings, tmp_path):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}
    settings.VAR_DIR = tmp_path
    assert redis_client() is None
    return locks.store_of_cache()


def test_on_the_file_cache_a_dead_holder_is_taken_over_once_and_a_re_taken_lock_is_left_alone(file_cache):
    assert isinstance(file_cache, locks.CacheLocks)
    assert locks.take(KEYS, dead_holder(1), LEASE)
    seen_first, seen_second = file_cache.read(KEYS), file_cache.read(KEYS)
    assert file_cache.take(KEYS, live_holder(2), LEASE, [seen for _, seen in seen_first])
    assert not file_cache.take(KEYS, live_holder(3), LEASE, [seen for _, seen in seen_second])
    assert not locks.take(KEYS, live_holder(3), LEASE)
    # An old holder's release, decided on what it read before another run took the lock, deletes nothing.
    assert file_cache.act_if_held("release", KEYS, [seen for _, seen in seen_first], 0, "", False) == 0
    locks.release(KEYS, live_holder(3))
    assert cache.get(KEYS[0]) == cache.get(KEYS[1]) == live_holder(2)
    assert locks.extend(KEYS, live_holder(2), LEASE) == 2
    assert locks.hand_over(KEYS, live_holder(2), "2", LEASE)
    locks.release(KEYS, "2")
    assert cache.get(KEYS[0]) is None and cache.get(KEYS[1]) is None
