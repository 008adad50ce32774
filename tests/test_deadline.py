"""``rag.deadline.pump``: the one thread-and-queue mechanism for time limits and cancel."""

from __future__ import annotations

import threading
import time

import pytest

from rag.deadline import END, TIMEOUT, Deadline, DeadlineExceeded, Idle, Pump, call_before, pump


class Source:
    """Yields ``items``, sleeping ``gaps[i]`` before item i; records whether it was closed."""

    def __init__(self, items, gaps=()):
        self.items, self.gaps, self.closed = list(items), list(gaps), threading.Event()

    def __iter__(self):
        try:
            for i, item in enumerate(self.items):
                if i < len(self.gaps):
                    time.sleep(self.gaps[i])
                yield item
        finally:
            self.closed.set()


def test_items_pass_through_and_the_source_is_closed():
    src = Source([1, 2, 3])
    assert list(pump(src)) == [1, 2, 3]
    assert src.closed.wait(1)


def test_a_deadline_ends_a_silent_source_and_names_the_step():
    src = Source([1, 2], gaps=[0, 5])
    got = []
    with pytest.raises(DeadlineExceeded, match="answer: the turn's time limit"):
        for item in pump(src, Deadline.after(0.3), what="answer"):
            got.append(item)
    assert got == [1]


def test_grace_extends_the_wait_past_the_deadline():
    src = Source([1], gaps=[0.4])
    assert list(pump(src, Deadline.after(0.1), grace=1.0)) == [1]


def test_nothing_starts_once_the_deadline_has_passed():
    started = threading.Event()

    def source():
        started.set()
        yield 1

    with pytest.raises(DeadlineExceeded):
        list(pump(source, Deadline(1.0, time.monotonic() - 1)))
    assert not started.wait(0.2)


def test_idle_counts_only_after_the_first_item():
    src = Source([1, 2], gaps=[0.3, 5])
    got = []
    with pytest.raises(Idle):
        for item in pump(src, idle=0.2):
            got.append(item)
    assert got == [1]


def test_cancel_ends_quietly_and_closes_the_source():
    cancel = threading.Event()
    src = Source(range(1000), gaps=[0] + [0.05] * 999)
    got = []
    for item in pump(src, cancel=cancel):
        got.append(item)
        if item == 2:
            cancel.set()
    assert got == [0, 1, 2]
    assert src.closed.wait(2)


def test_the_sources_error_reaches_the_reader():
    def source():
        yield 1
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        list(pump(source))


def test_pump_get_times_out_then_ends_and_stays_ended():
    p = Pump(Source([1], gaps=[0.3]))
    assert p.get(0.05) is TIMEOUT
    assert p.get(2) == 1
    assert p.get(2) is END and p.get(0) is END
    assert p.join(1)


def test_call_before_returns_raises_and_gives_up_at_the_deadline():
    assert call_before(lambda: 7, None, "x") == 7
    assert call_before(lambda: 7, Deadline.after(5), "x") == 7
    with pytest.raises(KeyError):
        call_before(lambda: {}["k"], Deadline.after(5), "x")
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="search"):
        call_before(lambda: time.sleep(3), Deadline.after(0.2), "search")
    assert time.monotonic() - t0 < 2


def test_a_cancelled_turn_gives_up_a_call_at_once_and_starts_none():
    from rag.deadline import Cancelled, cancel_event, scope

    cancel = threading.Event()
    started = []

    def slow():
        started.append(1)
        time.sleep(3)
        return 1

    with scope(None, cancel):  # no deadline: the cancel alone
        assert cancel_event() is cancel and call_before(lambda: 7, None, "x") == 7
        threading.Timer(0.2, cancel.set).start()
        t0 = time.monotonic()
        with pytest.raises(Cancelled) as raised:
            call_before(slow, None, "search")
        assert time.monotonic() - t0 < 1.5
        assert isinstance(raised.value, DeadlineExceeded)  # every timeout handler handles it
        with pytest.raises(Cancelled):
            call_before(slow, Deadline.after(5), "search")
    assert started == [1]  # the second call never started
    assert cancel_event() is None  # the scope is over


def test_nothing_is_pumped_once_cancelled():
    cancel = threading.Event()
    cancel.set()
    src = Source([1, 2])
    assert list(pump(lambda: iter(src), cancel=cancel)) == []
    time.sleep(0.1)
    assert not src.closed.is_set()  # never started
