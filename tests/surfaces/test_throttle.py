"""The sign-in throttle's time rules, exactly, on an injected clock: failures counted in a window
per client address, then locks that double up to a cap, forgiveness after a quiet window, no
address touching another's record, and memory bounded however many addresses fail.
(The HTTP surfaces that use it: tests/surfaces/web/test_signin_throttle.py.)"""

from __future__ import annotations

import pytest

from memdb.surfaces.throttle import FIRST_LOCK, LOOPBACK, MAX_FAILURES, MAX_LOCK, WINDOW, Throttle, client_address

A, B = "203.0.113.7", "198.51.100.9"


class Seconds:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Seconds:
    return Seconds()


def fail(throttle: Throttle, address: str = A, times: int = 1) -> list[int | None]:
    return [throttle.failed(address, "test") for _ in range(times)]


def test_the_defaults_are_the_documented_ones() -> None:
    assert (MAX_FAILURES, WINDOW, FIRST_LOCK, MAX_LOCK) == (5, 900.0, 60.0, 900.0)


def test_the_fifth_failure_within_the_window_locks_for_a_minute(clock: Seconds) -> None:
    throttle = Throttle(clock=clock)
    assert fail(throttle, times=4) == [None] * 4
    assert throttle.retry_after(A) is None  # four failures: not locked yet
    assert fail(throttle) == [60]
    assert throttle.retry_after(A) == 60
    clock.t += 59.5
    assert throttle.retry_after(A) == 1  # rounded up: a client waiting what it is told is never early
    clock.t += 0.5
    assert throttle.retry_after(A) is None  # the lock is over at exactly 60 s


def test_each_failure_after_a_lock_doubles_the_next_up_to_the_cap(clock: Seconds) -> None:
    throttle = Throttle(clock=clock)
    fail(throttle, times=5)
    locks = []
    for _ in range(6):
        clock.t += throttle.retry_after(A) or 0  # wait out the lock, then guess once more
        assert throttle.retry_after(A) is None
        locks.append(fail(throttle)[0])
    assert locks == [120, 240, 480, 900, 900, 900]


def test_failures_older_than_the_window_are_forgotten(clock: Seconds) -> None:
    throttle = Throttle(clock=clock)
    fail(throttle, times=4)
    clock.t += WINDOW - 1
    assert fail(throttle) == [60]  # five within 899 s
    other = Throttle(clock=clock)
    fail(other, times=4)
    clock.t += WINDOW  # the four are exactly a window old: gone
    assert fail(other, times=4) == [None] * 4
    assert fail(other) == [60]


def test_the_window_slides_over_each_failure(clock: Seconds) -> None:
    """Five failures less than a window apart, but never five within one window, never lock; the
    window ends a window after each failure, not after the first of a batch."""
    throttle = Throttle(clock=clock)
    start = clock.t
    for at in (0, 500, 1000, 1300, 1390):  # the first is 1390 s before the fifth: out of its window
        clock.t = start + at
        assert fail(throttle) == [None], at
    clock.t = start + 1400  # 500 is now exactly a window old: 1000, 1300, 1390 and this one count
    assert fail(throttle) == [None]
    clock.t = start + 1450  # five within 450 s
    assert fail(throttle) == [60]


def test_a_failure_exactly_a_window_old_no_longer_counts(clock: Seconds) -> None:
    throttle = Throttle(clock=clock)
    start = clock.t
    fail(throttle)
    clock.t = start + 100
    fail(throttle, times=3)  # the record stays alive: its last failure is recent
    clock.t = start + WINDOW  # the first is exactly a window old: four count, this one included
    assert fail(throttle) == [None]
    clock.t = start + WINDOW + 1
    assert fail(throttle) == [60]


def test_a_quiet_window_after_the_last_lock_forgives_an_address(clock: Seconds) -> None:
    throttle = Throttle(clock=clock)
    fail(throttle, times=5)
    clock.t += 60 + WINDOW - 1  # the lock ended 899 s ago: still on strike
    assert fail(throttle) == [120]
    clock.t += 120 + WINDOW  # a whole window without a failure since that lock ended
    assert fail(throttle, times=4) == [None] * 4
    assert fail(throttle) == [60]  # a fresh record: the first lock again


def test_an_address_never_touches_another_s_record(clock: Seconds) -> None:
    throttle = Throttle(clock=clock)
    fail(throttle, A, times=5)
    assert throttle.retry_after(A) == 60 and throttle.retry_after(B) is None
    assert fail(throttle, B, times=4) == [None] * 4  # B's count is its own
    assert throttle.retry_after(A) == 60  # and B's failures (or successes: none are recorded) leave A's lock


def test_memory_is_bounded_however_many_addresses_fail(clock: Seconds) -> None:
    throttle = Throttle(max_addresses=3, clock=clock)
    fail(throttle, A, times=5)
    for i in range(100):
        fail(throttle, f"192.0.2.{i}")
    assert len(throttle) == 3
    assert throttle.retry_after(A) is None  # evicted first: its failure was the oldest
    default = Throttle(clock=clock)
    for i in range(20_000):
        default.failed(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", "test")
    assert len(default) == 10_000


@pytest.mark.parametrize(
    ("client", "key"),
    [
        (("203.0.113.7", 4000), "203.0.113.7"),
        (("2001:db8:1:2:aaaa::1", 4000), "2001:db8:1:2::/64"),  # one host holds a whole /64
        (("2001:db8:1:2:ffff:ffff:ffff:ffff", 1), "2001:db8:1:2::/64"),
        (("::ffff:203.0.113.7", 4000), "203.0.113.7"),  # an IPv4 client on a dual-stack socket
        # this machine, from whichever loopback address a local process binds: one count
        (("127.0.0.1", 4000), LOOPBACK),
        (("127.0.0.2", 4000), LOOPBACK),
        (("127.255.255.254", 1), LOOPBACK),
        (("::1", 4000), LOOPBACK),
        (("::ffff:127.0.0.9", 4000), LOOPBACK),
        (("testclient", 50000), "testclient"),
        (("x" * 500, 1), "x" * 64),  # a proxy's text, bounded
        (None, ""),
    ],
)
def test_client_addresses_are_keyed_by_what_one_client_holds(client: tuple[str, int] | None, key: str) -> None:
    assert client_address({"client": client}) == key


@pytest.mark.parametrize(
    "options",
    [{"max_failures": 0}, {"max_addresses": 0}, {"window": 0}, {"first_lock": 0}, {"first_lock": 120, "max_lock": 60}],
)
def test_settings_that_make_no_throttle_are_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="Throttle:"):
        Throttle(**options)  # type: ignore[arg-type]


def test_a_lock_is_logged_without_the_address(clock: Seconds, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """A lock is a WARNING of memdb's logger, which a command shows on stderr (the process tests in
    tests/surfaces/web/test_signin_throttle.py read it there); the library itself prints nothing
    (it printed to stderr, past the one logging home)."""
    throttle = Throttle(clock=clock)
    fail(throttle, times=5)
    (lock,) = [r for r in caplog.records if r.name == "memdb.surfaces.throttle"]
    assert lock.levelname == "WARNING" and "locked for 60 s" in lock.getMessage() and A not in lock.getMessage()
    assert capsys.readouterr().err == ""
