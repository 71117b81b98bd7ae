"""The walker's bounds on hostile object graphs: deep chains and cycles, floods of one problem,
exceptions that misbehave, and the object budget. Expected paths and messages were taken from
running each input."""

from __future__ import annotations

import threading
import time

import pytest

from harness.inspect import walker
from harness.inspect.walker import MAX_SIMILAR, find_problems


class Holder:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


class Link:
    def __init__(self, nxt=None):
        self.next = nxt


class BadStr(Exception):
    def __str__(self):
        raise SystemExit("no message for you")


class RaisesBadStr:
    def __reduce__(self):
        raise BadStr


def chain(n: int, lock_at: int | None = None, cycle: bool = False) -> Link:
    links = [Link() for _ in range(n)]
    for a, b in zip(links, links[1:], strict=False):
        a.next = b
    if cycle:
        links[-1].next = links[0]
    if lock_at is not None:
        links[lock_at].lock = threading.Lock()
    return links[0]


def test_a_100000_node_cycle_held_by_its_head_names_the_lock_once():
    from user_code.hostile_cycle import head_only

    t0 = time.monotonic()
    problems = find_problems({"dataset": head_only()})
    assert time.monotonic() - t0 < 30
    assert [(p.path, p.label) for p in problems] == [
        ("dataset.head{.next * 40}.lock", "lock"),
        ("dataset.head", "too-deep"),
    ]
    assert problems[1].message == ("maximum recursion depth exceeded while pickling an object (a chain of "
                                   "100,000 nested objects starts here; it is a reference cycle back to this object)")
    assert problems[1].exc_type == "RecursionError"


def test_a_deep_chain_that_is_not_a_cycle_says_so():
    problems = find_problems({"dataset": Holder(items=[1, 2], head=chain(20_000))})
    assert [(p.path, p.label) for p in problems] == [("dataset.head", "too-deep")]
    assert problems[0].message.endswith("(a chain of 20,000 nested objects starts here)")


def test_a_short_cycle_with_a_lock_is_one_problem():
    # Up to MAX_REPEAT (3) repeats are written out; more are written once with a count.
    head = chain(5, lock_at=3, cycle=True)
    assert [p.path for p in find_problems({"dataset": Holder(head=head)})] == ["dataset.head.next.next.next.lock"]
    head = chain(5, lock_at=4, cycle=True)
    assert [p.path for p in find_problems({"dataset": Holder(head=head)})] == ["dataset.head{.next * 4}.lock"]


def test_many_identical_problems_are_listed_up_to_max_similar():
    items = [Holder(fn=lambda x: x) for _ in range(1000)]
    problems = find_problems({"dataset": Holder(items=items)})
    assert len(problems) == MAX_SIMILAR
    assert [p.path for p in problems] == [f"dataset.items[{i}].fn" for i in range(MAX_SIMILAR)]
    assert problems[-1].message.endswith(
        "(and 990 more objects failing the same way, not listed; the last at dataset.items[999].fn)")
    assert "more objects" not in problems[0].message


def test_an_exception_whose_str_raises_is_still_a_problem():
    (problem,) = find_problems({"dataset": Holder(bad=RaisesBadStr())})
    assert (problem.path, problem.exc_type, problem.message) == ("dataset.bad", "test_walker_hostile.BadStr",
                                                                 "(raised with no message)")


def test_the_walk_stops_at_its_object_budget(monkeypatch):
    monkeypatch.setattr(walker, "MAX_OBJECTS", 50)
    (problem,) = find_problems({"dataset": Holder(head=chain(3000, lock_at=2999))})
    assert (problem.path, problem.label) == ("dataset.head{.next * 49}", "too-deep")
    assert problem.message == ("maximum recursion depth exceeded while pickling an object "
                               "(the walk stopped here after 50 objects)")


@pytest.mark.parametrize("exc", [SystemExit(0), KeyboardInterrupt(), GeneratorExit()],
                         ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit"])
def test_a_base_exception_from_a_reducer_deep_in_a_chain_is_found(exc):
    class Raises:
        def __reduce__(self):
            raise exc

    head = chain(10_000)
    node = head
    for _ in range(7000):
        node = node.next
    node.bomb = Raises()
    problems = find_problems({"dataset": Holder(head=head)})
    assert [(p.path, p.exc_type) for p in problems][0] == ("dataset.head{.next * 7000}.bomb", type(exc).__name__)
