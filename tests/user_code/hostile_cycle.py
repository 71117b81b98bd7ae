"""A reference cycle of 100,000 nodes held by a dataset, with a ``threading.Lock`` inside it.

Problems (by hand): the chain ``dataset.nodes[0].next.next ...`` is 100,000 objects deep and
loops back to its first node, deeper than pickle's recursion limit, so a spawn start fails
with ``RecursionError`` (one problem, where the chain starts: ``dataset.nodes[0]``); and the
lock stored on node 4,321 cannot be pickled at all (``dataset.nodes[4321].lock``).
``head_only`` holds the same cycle through its first node only, so the lock's path runs along
the chain.
"""

import threading

import torch
from torch.utils.data import Dataset

N = 100_000
LOCK_AT = 4321


class Node:
    def __init__(self, i):
        self.i = i
        self.next = None


def _cycle(n=N, lock_at=LOCK_AT):
    nodes = [Node(i) for i in range(n)]
    for a, b in zip(nodes, nodes[1:], strict=False):
        a.next = b
    nodes[-1].next = nodes[0]
    nodes[lock_at].lock = threading.Lock()
    return nodes


class Graph(Dataset):
    def __init__(self, nodes=None, head=None):
        if nodes is not None:
            self.nodes = nodes
        if head is not None:
            self.head = head

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor(i)


def make_dataset():
    return Graph(nodes=_cycle())


def head_only():
    return Graph(head=_cycle(lock_at=40)[0])
