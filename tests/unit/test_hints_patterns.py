"""Every pattern a case declares in ``CASE['matches']`` matches something real.

A declaration that matches nothing is dead knowledge: ``diagnose`` or ``reproduce`` would
never name its case, and nobody would notice. So each pattern is checked, in the context of
the other keys of its declaration, against real observations:

* error patterns (``kind``, ``text``) against recorded errors: every cell of the committed
  shards (``reports/shards/*.json``, ``tests/data/shard-linux-py3.11.json``; their
  ``message``, ``root_cause``, ``evidence.message`` and ``stderr_tail``, with the cell's
  ``kind``), the tracebacks of public bug reports (``tests/data/tracebacks``, kind from their
  ``expect-kind`` header) and the stderr of real cells (``tests/data/stderr``, kind as the
  classifier gives it);
* object patterns (``type``, ``name``, ``path``, ``within``, ``is``) against what ``diagnose``
  finds in the loaders the catalogue's own bad cases build: each case module's ``run(cell)``
  is called (in one child process) with a cell that takes the ``DataLoader`` handed to
  ``cell.check`` instead of iterating it, and the loader is diagnosed under ``spawn`` as it is
  handed over (before the case's own clean-up). On Linux only: there every such case fails
  under ``spawn`` as declared (macOS and Windows share tensors through files, so a
  ``torch.Generator`` survives, and have no ``fork`` context for a fork-made ``Value``).

A real observation matched equally well by two cases would be named by case id order alone;
that is refused too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.catalogue.discover import discover
from harness.classify.classifier import classify_traceback
from harness.inspect.hints import Hints, matches_error, matches_object
from harness.inspect.walker import Problem

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]

ROOT = Path(__file__).resolve().parents[2]
DATA = TESTS / "data"
HINTS = Hints.from_cases(discover().cases)
LINUX_ONLY = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the bad cases fail under spawn as declared on Linux",
)

# Runs in a child process: import each case module, call run(cell) with a cell that keeps the
# loader instead of iterating it, and diagnose that loader as a spawn start would send it.
_CAPTURE = r"""
import dataclasses, importlib, json, multiprocessing, signal, sys, warnings
warnings.simplefilter("ignore")
multiprocessing.set_start_method("spawn", force=True)
from torch.utils.data import DataLoader
from harness.inspect.diagnose import diagnose


class Taken(BaseException):
    def __init__(self, found):
        self.found = found

class TakingCell:
    method, num_workers, first_batch_s, batches, in_process = "spawn", 2, None, 0, False
    def check(self, loader, expected=None):
        # diagnosed here, as handed over: the case's own clean-up (a finally that closes a
        # file) runs only after
        if not isinstance(loader, DataLoader):
            raise Taken("handed cell.check something else than a DataLoader")
        d = diagnose(loader)
        raise Taken([dataclasses.asdict(f.problem) for f in d.findings + d.hazards])
    iterate = check

def give_up(signum, frame):
    raise TimeoutError("the case took longer than 60 s to build its loader")

signal.signal(signal.SIGALRM, give_up)
found = {}
for case_id, module in json.loads(sys.argv[1]).items():
    signal.alarm(60)
    try:
        importlib.import_module(module).run(TakingCell())
        found[case_id] = "built no loader"
    except Taken as taken:
        found[case_id] = taken.found
    except BaseException as exc:
        found[case_id] = f"raised {type(exc).__name__}: {exc}"
    finally:
        signal.alarm(0)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump(found, out)
"""


def _problem(data: dict) -> Problem:
    return Problem(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@pytest.fixture(scope="module")
def object_observations(tmp_path_factory) -> dict[str, list[Problem]]:
    """Case id → what diagnose finds in the loader that bad case builds (cases that declare objects)."""
    modules = {d.case.id: d.case.module for d in HINTS.objects if not d.case.script}
    out = tmp_path_factory.mktemp("observed") / "found.json"
    proc = subprocess.run(
        [sys.executable, "-c", _CAPTURE, json.dumps(modules), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(out.read_text(encoding="utf-8"))
    broken = {case: what for case, what in found.items() if isinstance(what, str)}
    assert broken == {}, "these bad cases gave no loader to diagnose"
    return {case: [_problem(p) for p in problems] for case, problems in found.items()}


def _records() -> list[dict]:
    shards = sorted((ROOT / "reports" / "shards").glob("*.json")) + [
        DATA / "shard-linux-py3.11.json"
    ]
    records = [
        r for path in shards for r in json.loads(path.read_text(encoding="utf-8"))["results"]
    ]
    assert len(records) > 1000
    return records


def _error_observations() -> list[tuple[str | None, list[str], str]]:
    """``(kind, texts, where)`` for every recorded error."""
    out = []
    for r in _records():
        if r["outcome"] == "pass":
            continue
        evidence = r.get("evidence") or {}
        texts = [
            r.get("message") or "",
            r.get("root_cause") or "",
            evidence.get("message") or "",
            r.get("stderr_tail") or "",
            f"{r.get('message') or ''}\n{r.get('root_cause') or ''}",
        ]
        out.append((r.get("kind"), texts, f"{r['runner']}:{r['case']}:{r['method']}"))
    for path in sorted((DATA / "tracebacks").glob("*.txt")):
        head, _, text = path.read_text(encoding="utf-8").partition("\n---\n")
        kind = next(
            line.split(": ", 1)[1]
            for line in head.splitlines()
            if line.startswith("# expect-kind: ")
        )
        out.append((kind, [text], path.name))
    for path in sorted((DATA / "stderr").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        out.append((classify_traceback(text).kind, [text], path.name))
    return out


ERRORS = _error_observations()


def _one_by_one(patterns: dict[str, tuple[str, ...]]):
    """Each pattern of a declaration, with the rest of the declaration as it is:
    ``(key, pattern, declaration with only that pattern for that key)``."""
    for key, values in patterns.items():
        for value in values:
            yield key, value, {**patterns, key: (value,)}


def _where(d, key: str, value: str) -> str:
    return f"{d.case.path.relative_to(ROOT)}: {d.where}[{key!r}] = {value!r}"


def test_the_built_in_catalogue_declares_what_diagnose_and_reproduce_use():
    assert HINTS.errors == ()
    assert len(HINTS.objects) >= 20
    assert len(HINTS.texts) >= 20


def _unmatched(declarations, found, what: str) -> list[str]:
    """``file: CASE[...][key] = pattern matches no WHAT`` for each pattern ``found`` says no to."""
    return [
        f"{_where(d, key, value)} matches no {what}"
        for d in declarations
        for key, value, alone in _one_by_one(d.patterns)
        if not found(alone)
    ]


def test_every_error_pattern_matches_a_recorded_error():
    def recorded(alone) -> bool:
        return any(matches_error(alone, kind, text) for kind, texts, _ in ERRORS for text in texts)

    assert _unmatched(HINTS.texts, recorded, "recorded error") == []


@LINUX_ONLY
def test_every_object_pattern_matches_a_finding_in_the_catalogue_s_bad_cases(object_observations):
    problems = [p for found in object_observations.values() for p in found]
    assert len(problems) >= 20

    def found(alone) -> bool:
        return any(matches_object(alone, p) for p in problems)

    assert _unmatched(HINTS.objects, found, "finding of the bad cases") == []


def _ties(scored) -> list[str]:
    """The cases that share the best score, when there are two or more."""
    scored = [(score, d.case.id) for score, d in scored if score is not None]
    if not scored:
        return []
    best = max(score for score, _ in scored)
    tied = sorted({case for score, case in scored if score == best})
    return tied if len(tied) > 1 else []


def test_no_recorded_error_is_matched_equally_well_by_two_cases():
    ambiguous = []
    for kind, texts, where in ERRORS:
        text = texts[-1] if len(texts) > 1 else texts[0]
        tied = _ties((matches_error(d.patterns, kind, text), d) for d in HINTS.texts)
        if tied:
            ambiguous.append(f"{where}: {tied}")
    assert ambiguous == []


@LINUX_ONLY
def test_every_bad_case_s_own_findings_name_that_case(object_observations):
    """The loader a bad case builds is diagnosed as that case, with no tie to break."""
    wrong = []
    for case, problems in object_observations.items():
        for p in problems:
            tied = _ties((matches_object(d.patterns, p), d) for d in HINTS.objects)
            named = HINTS.case_for_problem(p)
            if tied or named is None or named.id != case:
                wrong.append(
                    f"{case}: {p.path} is named {named.id if named else None} (ties: {tied})"
                )
    assert wrong == []
