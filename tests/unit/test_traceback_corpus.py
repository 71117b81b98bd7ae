"""Classification of real tracebacks that users posted in public reports.

Each file in ``tests/data/tracebacks/`` holds the console output of one public report: GitHub
issues and pull requests of pytorch/pytorch, of projects built on PyTorch's ``DataLoader`` or on
``multiprocessing`` (MONAI, fastai-style tutorials, NiceGUI, pexpect, ...), and CPython's own
tracker. The reports come from Windows, macOS, Jupyter/IPython notebooks (including Colab) and
Linux, with Python 3.14 (where ``forkserver`` became the default start method) kept apart as
``linux-py3.14``. Only the error output is copied, never the prose around it. User names in paths
(``C:\\Users\\alice\\``, ``/Users/alice/``, ``/home/alice/``) are replaced by ``user``; everything
else is kept as posted, including the interleaved output of the parent and of its workers. Some
files are excerpts of a longer post, or drop Markdown markup around the text; a ``# note:`` line
says so.

Beside them, outputs captured from real runs made for this corpus: coloured tracebacks of
CPython 3.13 and 3.14 (``FORCE_COLOR=1 PYTHON_COLORS=1``, as CI services set ``FORCE_COLOR``),
with their escape sequences kept, and errors that a test runner or CLI framework (unittest,
pytest, Hydra, click, typer) caught and printed before it ended the process. Their
``source`` is ``captured``; ``captured-with`` names the exact interpreter and packages,
``command`` the command line (the script is described in a ``note``), and the file name is
``<platform>[-py<X.Y>]-<slug>``. Machine paths are replaced by ``/home/user/...``.

File format (``tests/data/tracebacks/<platform>-<slug>.txt``)::

    # source: <public URL of the report> | captured
    # captured-with: <interpreter version and packages; captured outputs only>
    # command: <the command run; captured outputs only>
    # platform: windows | macos | jupyter | linux-py3.14 | linux
    # python: <version if the report states it, else unknown>
    # expect-kind: <one kind from harness.classify.outcomes.KINDS>
    # expect-root-cause-contains: <exact substring of the decisive line>
    # note: <optional, any number of lines>
    ---
    <the text as posted>

``expect-kind`` is chosen by mechanism, as the taxonomy in :mod:`harness.classify.outcomes` defines it,
not by what any version of the classifier says. The decisive line is the root error: a pickling
failure in the parent is ``pickle`` even when the worker then printed ``EOFError: Ran out of
input``; a worker's bootstrapping ``RuntimeError`` is ``bootstrap`` even when the parent only
shows ``BrokenPipeError`` or ``exited unexpectedly``; a worker's own exception re-raised by torch
(``Caught KeyError in DataLoader worker process 0``) is ``worker-exception`` and its root cause is
the original exception line.

The classification tests call :func:`harness.classify.classifier.classify_traceback`, which takes a whole
pasted console output as a ``str`` and returns a :class:`~harness.classify.classifier.Verdict`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.classify.outcomes import KINDS

#: The tests folder: shared data, fixture catalogues and user code.
TESTS = Path(__file__).resolve().parents[1]


CORPUS = TESTS / "data" / "tracebacks"
PLATFORMS = ("windows", "macos", "jupyter", "linux-py3.14", "linux")
REQUIRED_KEYS = ("source", "platform", "python", "expect-kind", "expect-root-cause-contains")
#: Platforms whose spawn-only behaviour the corpus must cover well.
MIN_PER_PLATFORM = {"windows": 8, "macos": 8, "jupyter": 8}


@dataclass(frozen=True)
class Report:
    path: Path
    header: dict[str, str]
    notes: tuple[str, ...]
    text: str

    @property
    def kind(self) -> str:
        return self.header["expect-kind"]

    @property
    def root(self) -> str:
        return self.header["expect-root-cause-contains"]


def parse(path: Path) -> Report:
    """Split one corpus file into its ``# key: value`` header and the posted text."""
    raw = path.read_text(encoding="utf-8")
    head, sep, text = raw.partition("\n---\n")
    assert sep, f"{path.name}: no '---' line between header and text"
    header: dict[str, str] = {}
    notes: list[str] = []
    for line in head.splitlines():
        assert line.startswith("# ") and ": " in line, f"{path.name}: bad header line {line!r}"
        key, _, value = line[2:].partition(": ")
        if key == "note":
            notes.append(value)
        else:
            assert key not in header, f"{path.name}: duplicate header key {key!r}"
            header[key] = value
    return Report(path, header, tuple(notes), text)


FILES = sorted(CORPUS.glob("*.txt"))
REPORTS = [parse(p) for p in FILES]


def test_corpus_has_enough_reports_per_platform():
    counts = Counter(r.header.get("platform") for r in REPORTS)
    for platform, minimum in MIN_PER_PLATFORM.items():
        assert counts[platform] >= minimum, (
            f"{platform}: {counts[platform]} reports, want >= {minimum}"
        )


@pytest.mark.parametrize("report", REPORTS, ids=[p.stem for p in FILES])
def test_corpus_file_is_well_formed(report: Report):
    for key in REQUIRED_KEYS:
        assert report.header.get(key), f"missing or empty '# {key}:'"
    source = report.header["source"]
    if source == "captured":
        assert report.header.get("captured-with") and report.header.get("command"), (
            "a captured output names its interpreter (captured-with) and its command"
        )
        assert report.header["python"][:1].isdigit(), "a captured output states its exact Python version"
    else:
        assert source.startswith("https://"), "source must be a public URL or 'captured'"
    platform = report.header["platform"]
    assert platform in PLATFORMS
    assert report.path.stem.startswith(platform + "-"), "file name must start with its platform"
    assert report.kind in KINDS
    assert report.text.strip(), "no traceback text"
    # The expected root cause is copied from the text, so it must occur in it verbatim.
    assert report.root in report.text


@pytest.mark.parametrize("report", REPORTS, ids=[p.stem for p in FILES])
def test_classify_traceback_finds_mechanism_and_root_cause(report: Report):
    from harness.classify.classifier import classify_traceback

    verdict = classify_traceback(report.text)
    source = report.header["source"]
    assert verdict.kind == report.kind, f"{source}: root cause {verdict.root_cause!r}"
    assert report.root in verdict.root_cause
    # Coloured output: what is kept is plain text, never a terminal's escape sequence.
    assert "\x1b" not in verdict.root_cause + verdict.message
