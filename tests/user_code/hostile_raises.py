"""Hostile user code for ``harness diagnose``: objects and factories that raise BaseExceptions.

Each dataset holds one attribute whose pickling, unpickling or index drawing raises something
that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``). A real
spawn start runs the same ``__reduce__`` in the parent (or ``__setstate__`` in the worker), so
each is a problem at its own path: ``dataset.bomb`` for the reducers, ``indices`` for the
index that does not unpickle and for a ``__len__`` that interrupts the sampler.

The ``factory_*`` targets misbehave before there is a loader: they raise, sleep for an hour,
allocate 3 GiB, or end the process (``os._exit(3)``, SIGKILL).
"""

import os
import time

import torch
from torch.utils.data import DataLoader, Dataset, Sampler


class Raises:
    """Pickling it raises ``self.exc`` from ``__reduce__``."""

    def __init__(self, exc):
        self.exc = exc

    def __reduce__(self):
        raise self.exc


class Holds(Dataset):
    def __init__(self, bomb):
        self.bomb = bomb
        self.values = torch.arange(8)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.values[i]


def exit_0():
    return Holds(Raises(SystemExit(0)))


def exit_5():
    return Holds(Raises(SystemExit(5)))


def keyboard_interrupt():
    return Holds(Raises(KeyboardInterrupt()))


def generator_exit():
    return Holds(Raises(GeneratorExit()))


def escapes():
    """Its message clears the screen and paints what follows red, on a terminal."""
    return Holds(Raises(ValueError("\x1b[2J\x1b[31mall clear")))


class Unpicklable:
    """Pickles, but unpickling (in the worker) raises ``SystemExit(7)`` from ``__setstate__``."""

    def __init__(self, i):
        self.i = i

    def __setstate__(self, state):
        raise SystemExit(7)


class Samples(Sampler):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        return (Unpicklable(i) for i in range(self.n))


class ByIndex(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return torch.tensor(index.i)


def setstate_exits():
    return DataLoader(ByIndex(), sampler=Samples(8), batch_size=None, num_workers=2)


class LenInterrupts(Dataset):
    """Drawing the first indices calls ``__len__``, which raises ``KeyboardInterrupt``."""

    def __len__(self):
        raise KeyboardInterrupt

    def __getitem__(self, i):
        return torch.tensor(i)


def len_interrupts():
    return DataLoader(LenInterrupts(), batch_size=2, num_workers=2)


def factory_exits():
    raise SystemExit(3)


def factory_interrupts():
    raise KeyboardInterrupt


def factory_sleeps():
    time.sleep(3600)


def factory_sleeps_with_child():
    """Starts a grandchild that sleeps too, writes its pid to ``$HOSTILE_PID_FILE``, sleeps."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    with open(os.environ["HOSTILE_PID_FILE"] + ".tmp", "w") as f:
        f.write(str(child.pid))
    os.replace(os.environ["HOSTILE_PID_FILE"] + ".tmp", os.environ["HOSTILE_PID_FILE"])
    time.sleep(3600)


def factory_allocates():
    """Asks for 3 GiB at once: a ``MemoryError`` under a smaller memory bound."""
    return Holds(bytearray(3 << 30))


class Allocates:
    """Pickling it asks for 3 GiB at once."""

    def __reduce__(self):
        return (bytes, (bytearray(3 << 30),))


def reduce_allocates():
    return Holds(Allocates())


def prints():
    """A safe dataset whose factory prints to standard output."""
    print("hello from the factory")
    return Holds(None)


def factory_os_exit():
    os._exit(3)


def factory_kills_itself():
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
