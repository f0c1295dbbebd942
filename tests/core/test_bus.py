"""The in-process event bus: filters, bounded queues, closing, isolation of listeners."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from relay.core.bus import EventBus, Subscription
from relay.core.events import EventRecord, Notice


def rec(i: int, session_id: str = "s1", replay: bool = False) -> EventRecord:
    return EventRecord(id=i, session_id=session_id, run_id=None,
                       event=Notice(message=f"m{i}", replay=replay))


async def drain(sub: Subscription) -> list[EventRecord]:
    """Everything until the subscription ends (bounded, so a bug fails instead of hanging)."""
    async def _all() -> list[EventRecord]:
        return [r async for r in sub]
    return await asyncio.wait_for(_all(), 5)


async def test_subscription_receives_published_records_in_order() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    bus.publish([rec(1), rec(2, "s2")])
    bus.publish([rec(3)])
    sub.close()
    assert [r.id for r in await drain(sub)] == [1, 2, 3]
    assert sub.missed == 0


async def test_session_filter() -> None:
    bus = EventBus()
    only_a = bus.subscribe("a")
    only_b = bus.subscribe("b")
    everyone = bus.subscribe()
    bus.publish([rec(1, "a"), rec(2, "b"), rec(3, "a"), rec(4, "c")])
    for sub in (only_a, only_b, everyone):
        sub.close()
    assert [r.id for r in await drain(only_a)] == [1, 3]
    assert [r.id for r in await drain(only_b)] == [2]
    assert [r.id for r in await drain(everyone)] == [1, 2, 3, 4]


async def test_full_queue_drops_oldest_and_counts_missed() -> None:
    bus = EventBus()
    sub = bus.subscribe(maxsize=3)
    bus.publish([rec(i) for i in range(1, 9)])  # 8 into a queue of 3
    assert sub.missed == 5
    it = aiter(sub)
    assert [(await asyncio.wait_for(anext(it), 5)).id for _ in range(3)] == [6, 7, 8]
    # Room again: nothing more is dropped.
    bus.publish([rec(9), rec(10)])
    assert sub.missed == 5
    sub.close()
    assert [r.id for r in await drain(sub)] == [9, 10]


async def test_filtered_out_records_do_not_count_as_missed() -> None:
    bus = EventBus()
    sub = bus.subscribe("a", maxsize=2)
    bus.publish([rec(i, "b") for i in range(10)] + [rec(100, "a")])
    assert sub.missed == 0
    sub.close()
    assert [r.id for r in await drain(sub)] == [100]


async def test_slow_subscriber_does_not_affect_another() -> None:
    bus = EventBus()
    slow = bus.subscribe(maxsize=1)
    fast = bus.subscribe(maxsize=100)
    bus.publish([rec(i) for i in range(1, 6)])
    assert (slow.missed, fast.missed) == (4, 0)
    slow.close()
    fast.close()
    assert [r.id for r in await drain(fast)] == [1, 2, 3, 4, 5]


async def test_close_ends_iteration_of_a_waiting_consumer_and_unsubscribes() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    got: list[int] = []
    received = asyncio.Event()

    async def consume() -> None:
        async for r in sub:
            got.append(r.id)
            received.set()  # then straight back to waiting on the empty queue

    task = asyncio.create_task(consume())
    bus.publish([rec(1)])
    await asyncio.wait_for(received.wait(), 5)
    assert not task.done()  # it is blocked waiting for more
    sub.close()
    await asyncio.wait_for(task, 5)  # iteration ended
    assert got == [1]
    bus.publish([rec(2)])  # after close: not delivered, no error
    assert sub not in bus._subs
    assert got == [1]


async def test_close_on_a_full_queue_still_ends_iteration() -> None:
    bus = EventBus()
    sub = bus.subscribe(maxsize=2)
    bus.publish([rec(1), rec(2)])
    sub.close()  # must not raise QueueFull
    got = await drain(sub)
    assert got[-1].id == 2
    assert [r.id for r in got] in ([1, 2], [2])


async def test_records_published_before_close_are_delivered_then_iteration_ends() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    bus.publish([rec(1), rec(2)])
    sub.close()
    bus.publish([rec(3)])
    assert [r.id for r in await drain(sub)] == [1, 2]


async def test_failing_listener_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    before: list[list[int]] = []
    after: list[list[int]] = []

    def broken(records: Sequence[EventRecord]) -> None:
        raise RuntimeError("view exploded")

    bus.add_listener(lambda rs: before.append([r.id for r in rs]))
    bus.add_listener(broken)
    bus.add_listener(lambda rs: after.append([r.id for r in rs]))
    sub = bus.subscribe()
    with caplog.at_level(logging.ERROR, logger="relay.core.bus"):
        bus.publish([rec(1), rec(2)])
        bus.publish([rec(3)])
    assert before == after == [[1, 2], [3]]
    assert "view exploded" in caplog.text  # logged, not swallowed silently
    sub.close()
    assert [r.id for r in await drain(sub)] == [1, 2, 3]


async def test_remove_listener() -> None:
    bus = EventBus()
    calls: list[int] = []
    remove = bus.add_listener(lambda rs: calls.extend(r.id for r in rs))
    bus.publish([rec(1)])
    remove()
    remove()  # twice is harmless
    bus.publish([rec(2)])
    assert calls == [1]


async def test_replayed_records_are_filtered_out_of_a_mixed_batch() -> None:
    bus = EventBus()
    batches: list[list[int]] = []
    bus.add_listener(lambda rs: batches.append([r.id for r in rs]))
    sub = bus.subscribe()
    bus.publish([rec(1, replay=True), rec(2), rec(3, replay=True)])
    bus.publish([rec(4, replay=True)])  # nothing live: listeners are not called at all
    assert batches == [[2]]
    sub.close()
    assert [r.id for r in await drain(sub)] == [2]
