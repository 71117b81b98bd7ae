"""The walker's load half (:func:`harness.inspect.walker.roundtrip`, ``find_problems(load=True)``), its
version hazards (``hazards=True``), and where problems are placed (:mod:`harness.inspect.sites`).

Expected paths, messages and lines were taken from running each input (Python 3.11).
"""

from __future__ import annotations

import collections
import functools
import gc
import inspect
import itertools
import multiprocessing
import os
import sys
import threading

import numpy as np
import pytest
import torch

from harness.inspect import sites
from harness.inspect.walker import UnpicklingFailed, find_problems, hazard_probe, roundtrip

ON_314 = sys.version_info >= (3, 14)
HERE = os.path.relpath(__file__).replace(os.sep, "/")


class Holder:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


class Forwarding:
    """Forwards every missing attribute to ``self.dataset``: loading it recurses."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __getattr__(self, name):
        return getattr(self.dataset, name)


class ExitsOnLoad:
    def __init__(self):
        self.state = 1  # with no state, pickle never calls __setstate__

    def __setstate__(self, state):
        raise SystemExit(7)


Pair = collections.namedtuple("Pair", "a b")


def make_pair():
    """A namedtuple class made at each call under the module-level one's name."""
    Pair = collections.namedtuple("Pair", "a b")  # noqa: N806 - the point
    return Pair(1, 2)


def double(x, factor=2):
    return x * factor


class Vocab:
    size = 3

    def collate(self, batch):
        return batch


def make_local_class():
    class Local:
        pass

    return Local


def class_line(cls: type) -> int:
    return inspect.getsourcelines(cls)[1]


# -- round trips ---------------------------------------------------------------------------------

def test_roundtrip_copies_no_array_or_tensor_data():
    array = np.arange(1 << 20, dtype=np.float64)
    tensor = torch.arange(16)
    loaded = roundtrip(Holder(array=array, tensor=tensor))
    assert np.shares_memory(loaded.array, array)  # out of band: a view of the same buffer
    assert loaded.tensor.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
    assert not tensor.is_shared()  # not moved to shared memory, as a real start would


def test_a_loaded_queue_owns_duplicates_of_the_descriptors():
    queue = multiprocessing.get_context("spawn").Queue()
    loaded = roundtrip(Holder(queue=queue))
    assert loaded.queue._reader.fileno() != queue._reader.fileno()
    del loaded
    gc.collect()
    queue.put("still open")
    assert queue.get(timeout=10) == "still open"
    queue.close()
    queue.join_thread()


def test_roundtrip_says_when_loading_fails():
    with pytest.raises(UnpicklingFailed) as info:
        roundtrip(Forwarding([1, 2]))
    assert str(info.value) == ("pickles, but unpickling in the worker fails: RecursionError: maximum recursion depth "
                               "exceeded")
    assert isinstance(info.value.cause, RecursionError)


def test_load_walk_reports_what_does_not_load_and_not_what_does_not_dump_twice():
    dataset = Holder(wrapped=Forwarding([1]), fn=lambda x: x, exits=ExitsOnLoad(), fine=[1, 2])
    assert [p.path for p in find_problems({"dataset": dataset})] == ["dataset.fn"]
    problems = find_problems({"dataset": dataset}, load=True)
    assert [(p.path, p.label, p.exc_type) for p in problems] == [
        ("dataset.fn", "lambda", "AttributeError"),
        ("dataset.wrapped", "unpickle", "RecursionError"),
        ("dataset.exits", "unpickle", "SystemExit"),
    ]
    assert problems[2].message == "pickles, but unpickling in the worker fails: SystemExit: 7"


def test_a_wrapper_around_something_unpicklable_still_shows_once_that_is_cut():
    dataset = Forwarding(Holder(fn=lambda x: x))
    assert [(p.path, p.label) for p in find_problems({"dataset": dataset}, load=True)] == [
        ("dataset.dataset.fn", "lambda"),
        ("dataset", "unpickle"),
    ]


# -- version hazards -----------------------------------------------------------------------------

@pytest.mark.skipif(ON_314, reason="itertools iterators do not pickle at all on 3.14")
def test_itertools_iterators_are_hazards_with_their_paths():
    dataset = Holder(count=itertools.count(), nested=[itertools.chain([1], [2])], pairs=itertools.pairwise([1, 2]))
    assert hazard_probe(Holder(count=itertools.count())) is not None
    assert hazard_probe([1, 2]) is None
    problems = find_problems({"dataset": dataset}, hazards=True)
    assert [(p.path, p.label, p.breaks_on, p.exc_type) for p in problems] == [
        ("dataset.pairs", "itertools", None, "TypeError"),  # pairwise never pickled: a problem today
        ("dataset.count", "itertools", "3.14", "TypeError"),
        ("dataset.nested[0]", "itertools", "3.14", "TypeError"),
    ]
    assert problems[1].message.endswith("Python 3.14 removed pickling of itertools iterators (deprecated since "
                                        "3.12, gh-101588)")
    assert find_problems({"dataset": dataset}) == problems[:1]  # only asked for: no hazards
    # The simulation ends with the walk: itertools pickle again.
    assert roundtrip(itertools.count(5)).__next__() == 5


# -- sites ---------------------------------------------------------------------------------------

def test_functions_lambdas_partials_and_methods_are_placed_at_their_definition():
    fn = lambda x: x  # noqa: E731 - a lambda is the point
    assert sites.definition_site(fn) == (__file__, inspect.getsourcelines(fn)[1])
    assert sites.definition_site(double) == (__file__, double.__code__.co_firstlineno)
    assert sites.definition_site(functools.partial(functools.partial(double, factor=3), 1)) == (
        __file__, double.__code__.co_firstlineno)
    assert sites.definition_site(Vocab().collate) == (__file__, Vocab.collate.__code__.co_firstlineno)


def test_classes_and_instances_are_placed_at_the_class_statement():
    assert sites.definition_site(Forwarding) == (__file__, class_line(Forwarding))
    assert sites.definition_site(Forwarding([])) == (__file__, class_line(Forwarding))
    local = make_local_class()  # no methods: found by inspect, through its enclosing function
    assert sites.definition_site(local) == (__file__, class_line(local))
    assert sites.definition_site(ExitsOnLoad()) == (__file__, class_line(ExitsOnLoad))


def test_a_class_made_at_run_time_under_another_ones_name_has_no_site():
    made = type(make_pair())
    assert made is not Pair and made.__qualname__ == "Pair"
    assert sites.definition_site(made) is None  # never the module-level Pair's line
    assert sites.definition_site(Pair) is None  # namedtuple's methods live in collections


def test_library_objects_are_placed_at_the_nearest_user_object_holding_them():
    lock = threading.Lock()
    holder = Holder(lock=lock)
    assert sites.definition_site(lock) is None
    assert sites.definition_site(open(__file__)) is None  # noqa: SIM115 - closed at exit
    assert sites.site_along(lock, [holder]) == (HERE, class_line(Holder))
    assert sites.site_along(lock, [{"a": 1}]) == (None, None)
    (problem,) = find_problems({"dataset": holder})
    assert (problem.path, problem.file, problem.line) == ("dataset.lock", HERE, class_line(Holder))


def test_paths_are_relative_under_the_current_directory_else_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(os.path.dirname(__file__))
    assert sites.display_path(__file__) == os.path.basename(__file__)
    monkeypatch.chdir(tmp_path)
    assert sites.display_path(__file__) == os.path.abspath(__file__)


def hostile_classes():
    """A class whose metaclass ends the process at every attribute lookup, and an instance that
    does so when asked for its ``__class__`` (made here: pytest itself would trip on them)."""

    class Hostile(type):
        def __getattribute__(cls, name):
            raise SystemExit(f"looked up {name}")

    class Victim(metaclass=Hostile):
        def method(self):
            return 1

    class LiesAboutItsClass:
        @property
        def __class__(self):
            raise SystemExit("asked for __class__")

    return Victim, LiesAboutItsClass()


def line_of(text: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if line.strip() == text)


def test_hostile_classes_never_raise_out_of_a_site():
    victim, liar = hostile_classes()
    assert sites.definition_site(victim) == (__file__, line_of("class Victim(metaclass=Hostile):"))
    assert sites.definition_site(liar) == (__file__, line_of("class LiesAboutItsClass:"))
    assert sites.is_library_file(threading.__file__)
    assert not sites.is_library_file(__file__)
