"""Classify what a cell process left behind into an outcome, a kind and a root cause.

The parent of a ``DataLoader`` often sees only ``DataLoader worker (pid(s) ...) exited
unexpectedly``; the decisive error is in the worker's stderr, which the cell shares. We
classify by mechanism, not by one Python version's wording: Python 3.14 raises
``PicklingError`` where 3.11 raised ``AttributeError`` (CPython gh-122213 also adds
``__notes__`` such as ``when serializing dict item 'transform'``), so every pattern below
accepts both spellings, and the real text is kept in ``message`` and ``root_cause``.

When the parent only lost a worker (or, on Python 3.14, the forkserver that preloads
``__main__``), its own exception is secondary: ``ConnectionResetError``, ``BrokenPipeError``,
``EOFError: Ran out of input``. The worker's stderr then decides. Patterns are tested on stderr
observed on every Python from 3.10 to 3.14 (the committed shards, ``tests/data/stderr/``) and on
tracebacks from public reports on Windows, macOS and notebooks (``tests/data/tracebacks/``).

Text is read as a terminal shows it: escape sequences are taken off wherever text comes in
(Python 3.13+ colours tracebacks under ``FORCE_COLOR``, which CI services set), and so are
pytest's ``E`` prefixes and rich's boxes. A chained traceback is decided by its final exception
before its causes, and a ``SystemExit`` that a framework raised after printing the error it
caught (unittest, pytest, Hydra, click) is judged by that printed error.

A result record keeps the evidence (:func:`evidence_of`) and the :data:`CLASSIFIER_VERSION`
that judged it, so :func:`reclassify` re-derives an older verdict without running the cell again.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from harness.child.status import RETURNED, is_broken_case, is_case_verdict

if TYPE_CHECKING:
    from harness.child.status import CellResult

__all__ = [
    "CLASSIFIER_VERSION",
    "EVIDENCE_CHARS",
    "MESSAGE_CHARS",
    "clip",
    "Observation",
    "Evidence",
    "Verdict",
    "classify",
    "classify_traceback",
    "decisive_stderr_line",
    "evidence_of",
    "exit_status_name",
    "reclassify",
    "strip_escapes",
]


@dataclass
class Observation:
    """Everything the parent saw of one cell.

    Attributes:
        returncode: the cell process's exit status; negative is ``-signal`` (POSIX).
        timed_out: the watchdog killed the cell after its timeout.
        result: the cell's result file (:class:`harness.child.status.CellResult`), or ``None``
            if it wrote none.
        stderr: the cell's stderr, which its workers share.
    """

    returncode: int | None
    timed_out: bool
    result: CellResult | None
    stderr: str


@dataclass
class Verdict:
    """``outcome`` (see :mod:`harness.classify.outcomes`), ``kind`` for errors, first ``message`` line,
    and the decisive ``root_cause`` line."""

    outcome: str
    kind: str | None
    message: str
    root_cause: str


#: Bumped whenever a rule below changes what a verdict would be; a result record names the
#: version that made its verdict, and :func:`reclassify` re-derives older ones from their evidence.
CLASSIFIER_VERSION = 6

# (kind, pattern) in priority order; the first pattern found in the text decides. Each pattern
# holds every wording we have seen for that mechanism, from Python 3.8 to 3.14, Linux, macOS,
# Windows and notebooks (tests/data/stderr/, tests/data/tracebacks/):
#   * pickle: 3.8-3.12 "Can't pickle local object 'f.<locals>.g'", 3.13 "Can't get local object
#     'f.<locals>.g'", 3.14 "Can't pickle local object <function f.<locals>.g at 0x...>" (a
#     PicklingError), "cannot pickle 'X' object" (<= 3.13) and "cannot pickle 'X' instances"
#     (3.14), "attribute lookup X on M failed" (<= 3.13) and "it's not found as M.X" /
#     "it's not the same object as M.X" (3.14), Python 2-era "can't pickle X objects".
#   * main-attribute: "Can't get attribute 'f' on <module '__mp_main__' ...>" (<= 3.13) and
#     "module '__mp_main__' has no attribute 'f'" (3.14); '__main__' in notebooks and REPLs.
_KIND_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("bootstrap", re.compile(r"before the current process\s+has finished its\s+bootstrapping\s+phase|"
                             r"has finished its bootstrapping phase|bootstrapping phase")),
    ("main-attribute", re.compile(
        r"Can't get attribute '[^']+' on <module '__(?:mp_)?main__'|"
        r"module '__(?:mp_)?main__' has no attribute '[^']+'")),
    ("context-mix", re.compile(r"SemLock created in a \w+ context is being shared with a process in a \w+ context|"
                               r"A SemLock created in a fork context")),
    # A forked worker that touches the CUDA context its parent created: torch's own check, or
    # the driver's "initialization error" when the check is bypassed (torch/cuda/__init__.py).
    ("cuda-reinit", re.compile(r"Cannot re-initialize CUDA in forked subprocess|"
                               r"CUDA error: initialization error")),
    ("daemonic", re.compile(r"daemonic processes are not allowed to have children")),
    # torch's file_descriptor sharing strategy: recvmsg got no descriptor (EMFILE in the
    # receiver), or torch's own "Too many open files" hint (torch/utils/data/dataloader.py).
    ("fd-limit", re.compile(r"received 0 items of ancdata|Too many open files")),
    ("pickle", re.compile(
        r"Can't pickle local object|Can't pickle <|Can't get local object|"
        r"cannot pickle '[^']+' (?:object|instances)|[Cc]an't pickle|attribute lookup \S+ on \S+ failed|"
        r"it's not (?:found as|the same object as) [\w.<>]+|"
        r"PicklingError|is not picklable|cannot be pickled|Pickling an AuthenticationString|"
        r"ctypes objects containing pointers cannot be pickled")),
]

#: Exceptions the parent raises when a worker (or the forkserver) vanished: never the root
#: cause when a worker left its own error in stderr. ``EOFError: Ran out of input`` is what a
#: spawn child on Windows prints when the parent failed to pickle what it had to send.
_SECONDARY = re.compile(
    r"^(?:[\w.]+\.)?(?:ConnectionResetError|BrokenPipeError|ConnectionRefusedError|ConnectionAbortedError|"
    r"EOFError|OSError: \[Errno (?:32|104|111)\])\b|Ran out of input|"
    r"Connection reset by peer|Broken pipe|"
    # the parent's own report that a worker vanished: the worker's line, printed before it, decides
    r"DataLoader worker \(pid.*?\) exited unexpectedly")

_WORKER_EXITED = re.compile(r"DataLoader worker \(pid\(s\)? [^)]*\) exited unexpectedly|exited unexpectedly with exit code")
_WORKER_SIGNAL = re.compile(r"DataLoader worker \(pid:? ?\d+\) is killed by signal: ([^.\n]+)")
# torch's worker signal handlers print "ERROR: Unexpected segmentation fault encountered in worker."
# (torch/csrc/DataLoader.cpp); faulthandler prints "Fatal Python error: Segmentation fault".
_FATAL = re.compile(r"ERROR: Unexpected [\w -]+ encountered in worker\.|Fatal Python error: [^\n]+|"
                    r"DataLoader worker \(pid:? ?\d+\) is killed by signal: [^.\n]+")
# "exited unexpectedly with exit code 3221225477": on Windows a process that crashed ends with an
# NTSTATUS code (winnt.h / ntstatus.h), not a negative signal number.
_EXIT_CODE = re.compile(r"exited unexpectedly with exit code (-?\d+)")
_NTSTATUS = {
    0xC0000005: "STATUS_ACCESS_VIOLATION",
    0xC00000FD: "STATUS_STACK_OVERFLOW",
    0xC0000409: "STATUS_STACK_BUFFER_OVERRUN",
    0xC0000374: "STATUS_HEAP_CORRUPTION",
    0xC000013A: "STATUS_CONTROL_C_EXIT",
    0xC0000017: "STATUS_NO_MEMORY",
    0xC000001D: "STATUS_ILLEGAL_INSTRUCTION",
    0xC0000094: "STATUS_INTEGER_DIVIDE_BY_ZERO",
    0xC0000135: "STATUS_DLL_NOT_FOUND",
    0xC0000142: "STATUS_DLL_INIT_FAILED",
}
# A spawn child that finds its parent's pipe empty while it unpickles the process object: on
# Windows the child prints this when the parent's own pickling failed (the parent's error is
# often missing from a pasted report).
_LOST_MARK = "reduction.pickle.load(from_parent)"
_LOST_LINE = "EOFError: Ran out of input"


def _lost_process_object(text: str) -> bool:
    """Whether a child's unpickling of its process object ran out of input (a few lines on)."""
    at = text.find(_LOST_MARK)
    while at != -1:
        after = text[at + len(_LOST_MARK):].lstrip("\r\n ").splitlines()[:6]
        if any(line.strip().startswith(_LOST_LINE) for line in after):
            return True
        at = text.find(_LOST_MARK, at + 1)
    return False

_WORKER_CAUGHT = re.compile(r"Caught (\w+) in DataLoader worker process \d+")
_EXC_LINE = re.compile(r"^(?:[\w.]+\.)?(?:\w*Error|\w*Exception|\w*Warning|KeyboardInterrupt|SystemExit)\b.*$|"
                       r"^_pickle\.PicklingError.*$")
#: The kinds a "Caught X in DataLoader worker process N" re-raise can carry, instead of
#: ``worker-exception``.
_CAUGHT_KINDS = ("cuda-reinit", "context-mix", "daemonic", "fd-limit")
#: The kinds a worker's stderr can establish on its own.
_WORKER_KINDS = ("bootstrap", "main-attribute", "pickle", "context-mix", "cuda-reinit", "daemonic", "fd-limit")

#: The two lines CPython prints between the blocks of a chained traceback (``Lib/traceback.py``:
#: ``__context__`` and ``__cause__``); the block after the last one holds the final exception.
_CHAIN = re.compile(r"^\s*(?:During handling of the above exception, another exception occurred:|"
                    r"The above exception was the direct cause of the following exception:)\s*$")
#: Exceptions that only end a process after a framework printed the error it caught:
#: ``SystemExit`` (``unittest.main()``: ``sys.exit(not result.wasSuccessful())``; Hydra's
#: ``run_and_report`` and click's standalone mode: ``sys.exit(1)``; ``sys.exit(pytest.main())``),
#: click's ``Exit`` and ``Abort`` (typer re-exports them).
_EXIT = re.compile(r"^(?:[\w.]+\.)?(?:SystemExit|Exit|Abort)\b")
#: ``torch.multiprocessing.spawn`` (``torch/multiprocessing/spawn.py``): a process that died by a
#: signal or exited with a code (``ProcessExitedException``), or one whose function raised
#: (``ProcessRaisedException``, whose message holds that process's traceback).
_SPAWN_SIGNAL = re.compile(r"^(?:[\w.]+\.)?ProcessExitedException: process \d+ terminated with signal \w+", re.M)
_SPAWN_EXIT = re.compile(r"^(?:[\w.]+\.)?ProcessExitedException: process \d+ terminated with exit code -?\d+", re.M)
_SPAWN_RAISED = re.compile(r"-- Process \d+ terminated with the following error:")


#: ECMA-48 (ISO/IEC 6429) escape and control sequences, in their 7-bit and 8-bit forms: CSI
#: (``ESC [`` parameters, intermediates, a final byte: colours, cursor moves), the command
#: strings OSC, DCS, SOS, PM and APC (up to BEL or ST; OSC 8 is a hyperlink), the ``nF``
#: escapes (character set designation) and the two-byte ``Fp``/``Fe``/``Fs`` escapes. A command
#: string never runs past its line, so an unterminated one cannot swallow the traceback below it.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]+[\x30-\x7e]?"
    r"|\x1b[\x30-\x7e]?"
    # the remaining C0 and C1 controls (BEL, backspace, ...): never part of an error line
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\x80-\x8f\x91-\x97\x99\x9a\x9c]"
)


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences and control characters.

    Python 3.13 colours its tracebacks when ``FORCE_COLOR`` or ``PYTHON_COLORS=1`` is set (CI
    services set ``FORCE_COLOR``; "Controlling color" in the CPython 3.13 docs, ``Lib/_colorize.py``),
    so an exception line reaches the classifier as ``ESC[1;35mKeyError ESC[0m: ESC[35m...``;
    pytest, unittest (3.14) and rich colour theirs too. Every ECMA-48 sequence goes: CSI, the
    command strings (OSC, DCS, SOS, PM, APC), ``nF`` and two-byte escapes, in 7-bit and 8-bit
    form, and other controls but tab, newline and carriage return.

    Args:
        text: any captured or pasted output (str).

    Returns:
        The text as a terminal would show it, without its colours (str).
    """
    return _ESCAPES.sub("", text)


#: pytest's failure lines: ``E       _pickle.PicklingError: ...`` (``_pytest/_code/code.py``
#: prefixes each line of the exception with ``E`` and spaces).
_PYTEST_E = re.compile(r"^E {3}(?=\s*\S)")
#: A line of a box drawn by rich (typer's and rich's tracebacks): source code and locals,
#: never the exception line, which rich prints below the box.
_BOX = re.compile(r"^\s*[\u2500-\u257f]")


#: What tools put before each line of a process's output: a GitHub Actions log's timestamp,
#: torchrun's ``[rank0]:``, docker compose's ``service-1  |``, and the ``|`` that frames each
#: exception of an ``ExceptionGroup`` (``Lib/traceback.py``, PEP 654). Taken off before the
#: rules read a line, so a decisive line is the process's own text.
_LINE_PREFIX = re.compile(r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?|\[(?:rank|default)\d+\]:\s?|"
                          r"[A-Za-z][\w.-]*-\d+\s+\|\s?|\s*(?:\|\s)+)")
_ANY_LINE_PREFIX = re.compile(_LINE_PREFIX.pattern, re.M)


def _plain(text: str) -> str:
    """``text`` as the rules read it: no escapes, line prefixes of log tools taken off
    (:data:`_LINE_PREFIX`), pytest's ``E`` prefix taken off, rich's boxes blanked (source shown
    in a box is not evidence)."""
    text = strip_escapes(text)
    boxed = any("\u2500" <= c <= "\u257f" for c in text)
    if "E   " not in text and not boxed and not _ANY_LINE_PREFIX.search(text):
        return text
    out = []
    for line in text.splitlines():
        if _BOX.match(line):
            line = ""
        line = _LINE_PREFIX.sub("", line, count=1)
        out.append(_PYTEST_E.sub("", line))
    return "\n".join(out)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


_FILE_LINE = re.compile(r'^(\s*)File "')


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_source_line(lines: list[str], idx: int) -> bool:
    """Whether ``lines[idx]`` is source code quoted in a traceback, below a ``File "..."`` line.

    CPython indents a frame by 2 and its source by 4 (``Lib/traceback.py``); from 3.13 a
    statement over several lines is shown as its first line, ``...<N lines>...`` and its last
    line, with the carets below. So the line, and every line up to the frame line, is
    indented, and the one just below the frame line is indented by a few more (2 as printed;
    up to 4 in a paste that lost or doubled indentation). A message
    line indented further, such as the bootstrapping ``RuntimeError``'s, is not source even
    where another worker's frame line came just before it (Windows consoles interleave the
    workers' stderr).
    """
    if not lines[idx][:1].isspace():
        return False
    for j in range(idx - 1, max(-1, idx - 7), -1):
        frame = _FILE_LINE.match(lines[j])
        if frame is not None:
            return 0 < _indent(lines[j + 1]) - len(frame.group(1)) <= 4
        if not lines[j][:1].isspace() or not lines[j].strip():
            return False
    return False


#: Lines that are a traceback's structure, never part of an exception's message.
_STRUCTURE = re.compile(r'^\s*(?:File "|Traceback \(most recent call last\)|[~^]+$|\.\.\.<\d+ lines>\.\.\.$|'
                        r"Process (?:\w+Process|\w+PoolWorker)-\d+:$)")


def _exception_block(lines: list[str], idx: int) -> str:
    """The exception line that opens the message matched at ``lines[idx]``, joined with the
    message lines up to ``idx`` (a multi-line message such as the bootstrapping ``RuntimeError``
    matches on a later line; its exception line is at most four message lines above).

    The lines above are read as one traceback: a line that repeats one printed shortly before
    is dropped, and so are frames and quoted source. Two spawn workers writing the same
    traceback to one Windows console, line by line, then read as one worker printed it.
    """
    seen: set[str] = set()
    view: list[str] = []
    for line in lines[max(0, idx - 60) : idx + 1]:
        text = line.strip()
        if text and text not in seen:
            seen.add(text)
            view.append(line)
    kept = [x.strip() for i, x in enumerate(view) if not _STRUCTURE.match(x) and not _is_source_line(view, i)]
    target = lines[idx].strip()
    if target not in kept:
        return target
    pos = kept.index(target)
    for back in range(pos, max(-1, pos - 5), -1):
        if _EXC_LINE.match(kept[back]):
            return " ".join(kept[back : pos + 1])
    return target


def _kind_of(text: str) -> tuple[str | None, str | None]:
    """The first kind (in priority order) whose pattern occurs in ``text``, and its decisive line.

    Lines quoted from source code in a traceback (``raise PicklingError(...)``) are not
    evidence; among the matching lines, an exception line is preferred to a mere mention.
    """
    lines = text.splitlines()
    for kind, pat in _KIND_PATTERNS:
        hits = [i for i, line in enumerate(lines) if pat.search(line) and not _is_source_line(lines, i)]
        if not hits:  # a pattern that spans lines (a wrapped message)
            m = next((m for m in pat.finditer(text) if "\n" in m.group(0)), None)
            if m is not None:
                hits = [text.count("\n", 0, m.end())]
        if not hits:
            continue
        blocks = [_exception_block(lines, i) for i in hits]
        for block in blocks:
            if _EXC_LINE.match(block):
                return kind, block
        return kind, blocks[0]
    return None, None


def decisive_stderr_line(stderr: str) -> tuple[str | None, str]:
    """The worker's own decisive error from ``stderr``: ``(kind or None, line)``.

    Looks for a known mechanism first (bootstrapping phase, ``Can't get attribute``, ...),
    then for the last exception line that is not a secondary one (a broken pipe or a reset
    connection to a process that already died), then for any last exception line. Terminal
    escapes (:func:`strip_escapes`) are taken off first, so the line is plain text. Returns
    ``(None, "")`` when stderr holds no error.
    """
    stderr = _plain(stderr)
    kind, line = _kind_of(stderr)
    if kind:
        return kind, line or ""
    last = primary = ""
    for cand in stderr.splitlines():
        cand = cand.strip()
        if _EXC_LINE.match(cand):
            last = cand
            if not _SECONDARY.search(cand):
                primary = cand
    return None, primary or last


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def exit_status_name(returncode: int | None) -> str | None:
    """The name of a crash exit status, or ``None`` for an ordinary exit.

    POSIX: a negative return code is ``-signal`` (``-11`` → ``SIGSEGV``). Windows: a process
    that crashed exits with an NTSTATUS code (``3221225477`` = ``0xC0000005``,
    ``STATUS_ACCESS_VIOLATION``); any code of severity "error" (``0xC0000000`` and up, also
    seen as a negative 32-bit number) counts.
    """
    if returncode is None or returncode == 0:
        return None
    if -128 < returncode < 0:
        return _signal_name(-returncode)
    unsigned = returncode & 0xFFFFFFFF
    if unsigned >= 0xC0000000:
        return f"{_NTSTATUS.get(unsigned, 'NTSTATUS')} (0x{unsigned:08X})"
    return None


def _with_notes(headline: str, notes: list[str]) -> str:
    """The exception line plus Python 3.11+ ``__notes__`` (3.14's pickler names the path in them)."""
    notes = [n.strip() for n in notes if n and n.strip()]
    return f"{headline} ({'; '.join(notes)})" if notes else headline


def _from_worker(stderr: str, text: str, headline: str) -> Verdict:
    """A parent that only saw a worker (or the forkserver) vanish: the worker's stderr decides."""
    kind, line = decisive_stderr_line(stderr)
    if kind in _WORKER_KINDS:
        return Verdict("error", kind, headline, line)
    fatal = _FATAL.search(stderr)
    if fatal:  # faulthandler's or torch's report of a worker killed by a signal
        return Verdict("error", "worker-died", headline, fatal.group(0).strip())
    code = _EXIT_CODE.search(text)
    crash = exit_status_name(int(code.group(1))) if code else None
    if crash:
        return Verdict("error", "worker-died", headline, f"worker exited with {crash}")
    return Verdict("error", "worker-died", headline, line or headline)


def classify(obs: Observation) -> Verdict:
    """Turn an :class:`Observation` into a :class:`Verdict`.

    Terminal escapes are taken off the stderr and the result's text first (a cell may run with
    ``FORCE_COLOR`` set, which colours Python 3.13+ tracebacks; see :func:`strip_escapes`), so
    no rule and no kept line depends on colours being off.

    Rules, in order:
        * watchdog timeout → ``hang``;
        * no result and a crash exit status (``-signal`` on POSIX, an NTSTATUS code such as
          ``0xC0000005`` on Windows) → ``crash``; no result otherwise → ``error`` with the
          kind and line of the last error in stderr (``other`` when no mechanism shows);
        * ``wrong`` / ``skipped`` statuses pass through with their one-line reason;
        * a raised exception → ``error`` with a kind:
            - ``SystemExit`` (or click's ``Exit``) after a framework printed the error it caught
              (``unittest.main()``, Hydra, ``sys.exit(pytest.main())``, click's standalone
              mode) → that printed traceback, classified as :func:`classify_traceback` does;
            - torch's "killed by signal", or ``torch.multiprocessing.spawn``'s
              ``ProcessExitedException: process N terminated with signal S`` → ``worker-died``;
            - "Caught X in DataLoader worker process N" → ``worker-exception`` (or the
              mechanism it names, such as ``cuda-reinit``), root cause the worker's original
              exception;
            - the parent's own mechanism (``pickle`` ...), root cause its line plus notes;
            - ``ProcessRaisedException`` ("-- Process N terminated with the following error")
              → ``worker-exception`` with that process's own last exception line;
            - "exited unexpectedly", ``ProcessExitedException: ... exit code N``, or a secondary
              error of a process that already died (``ConnectionResetError``,
              ``BrokenPipeError``, ``EOFError: Ran out of input``, as a Python 3.14 forkserver
              parent raises) → the worker's decisive stderr line (``bootstrap``,
              ``main-attribute``, ``pickle`` ...), else ``worker-died``;
            - else ``other``.
    """
    res = obs.result
    stderr = _plain(obs.stderr)
    if obs.timed_out:
        _, line = decisive_stderr_line(stderr)
        return Verdict("hang", None, "timed out; process group killed", line)
    if res is None:
        crash = exit_status_name(obs.returncode)
        if crash:
            return Verdict("crash", None, f"cell process killed by {crash}", f"killed by {crash}")
        kind, line = decisive_stderr_line(stderr)
        msg = f"cell process exited with code {obs.returncode} without a result"
        return Verdict("error", kind or "other", msg, line or msg)
    status = res.get("status", "")
    full_message = strip_escapes(str(res.get("message", "")))
    message = _first_line(full_message)
    if status == RETURNED:
        batches = res.get("batches")
        checked = isinstance(batches, int) and not isinstance(batches, bool) and batches > 0
        if res.get("require_check") and not checked:
            how = "ended with sys.exit()" if res.get("system_exit") else "returned"
            msg = f"the case {how} without a checked batch (cell.check or cell.iterate never got one)"
            return Verdict("error", "unchecked", msg, msg)
        return Verdict("pass", None, "", "")
    if is_case_verdict(status):  # the case raised harness.case.Wrong or Skip: "wrong", "skipped"
        return Verdict(status, None, message, message)
    exc_type = strip_escapes(str(res.get("exc_type", "")))
    if is_broken_case(status):
        line = f"{exc_type or 'Error'}: {message}"
        return Verdict("error", "import", line, line)
    # status == RAISED
    notes = [strip_escapes(str(n)) for n in res.get("notes", [])]
    text = "\n".join([full_message, *notes])
    headline = f"{exc_type}: {message}" if message else exc_type
    if _EXIT.match(exc_type):
        printed = _printed_error(stderr)
        if printed is not None:
            return printed
    sig = _WORKER_SIGNAL.search(text)
    if sig:
        return Verdict("error", "worker-died", headline, f"worker killed by signal: {sig.group(1)}")
    spawn_sig = _SPAWN_SIGNAL.search(headline)
    if spawn_sig:
        return Verdict("error", "worker-died", headline, spawn_sig.group(0))
    caught = _WORKER_CAUGHT.search(text)
    if caught:
        kind, found = _kind_of(text)
        if kind in _CAUGHT_KINDS:
            return Verdict("error", kind, headline, found or headline)
        # The original exception is the last exception line of the worker's traceback.
        _, original = decisive_stderr_line(full_message)
        return Verdict("error", "worker-exception", headline, original or headline)
    own, _ = _kind_of(f"{exc_type}: {text}")
    if own:
        return Verdict("error", own, headline, _with_notes(headline, notes))
    raised_in = _SPAWN_RAISED.search(text)
    if raised_in:
        _, original = decisive_stderr_line(text[raised_in.end():])
        return Verdict("error", "worker-exception", _with_spawn_headline(headline, raised_in.group(0)),
                       original or headline)
    if _WORKER_EXITED.search(text) or _SPAWN_EXIT.search(headline):
        return _from_worker(stderr, text, headline)
    if _SECONDARY.search(headline):
        # The parent lost its connection to a worker or to the forkserver (Python 3.14's
        # forkserver imports __main__ itself, and dies where a worker would): the child's own
        # error decides; with no child error in stderr, the parent's is all there is.
        verdict = _from_worker(stderr, text, headline)
        if verdict.kind != "worker-died" or verdict.root_cause != headline:
            return verdict
    return Verdict("error", "other", headline, headline)


_SPAWN_RAISED_TYPE = re.compile(r"^\s*((?:[\w.]+\.)?ProcessRaisedException):", re.M)


def _with_spawn_headline(headline: str, marker: str, text: str = "") -> str:
    """A ``ProcessRaisedException``'s headline that names the process (its message starts with
    blank lines, and the last exception line of a pasted output is the process's own)."""
    if marker in headline:
        return headline
    named = _SPAWN_RAISED_TYPE.search(text)
    return f"{named.group(1) if named else 'ProcessRaisedException'}: {marker}"


def _printed_error(stderr: str) -> Verdict | None:
    """The verdict on the error a framework printed to stderr before it raised ``SystemExit``,
    or ``None`` when stderr holds no error line (then the exit itself is all there is)."""
    lines = stderr.splitlines()
    if not any(_EXC_LINE.match(x.strip()) and not _EXIT.match(x.strip()) for x in lines) and _kind_of(stderr)[0] is None:
        return None
    return classify_traceback(stderr)


def _last_exception_index(lines: list[str]) -> int | None:
    """Index of the last exception line of a pasted output: not quoted source, not a
    ``Traceback`` header, and not an exit exception (``SystemExit: True`` after
    ``unittest.main()``) when a real one was printed before it."""
    last = last_exit = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _EXC_LINE.match(stripped) and not stripped.startswith("Traceback") and not _is_source_line(lines, i):
            if _EXIT.match(stripped):
                last_exit = i
            else:
                last = i
    return last if last is not None else last_exit


def _final_block(lines: list[str], idx: int) -> str:
    """The final exception's line at ``lines[idx]`` with the lines of its message and notes
    below it (up to a blank line, a new traceback or a chain line)."""
    out = [lines[idx]]
    for line in lines[idx + 1 : idx + 40]:
        stripped = line.strip()
        if not stripped or _STRUCTURE.match(line) or _CHAIN.match(line) or _EXC_LINE.match(stripped):
            break
        out.append(line)
    return "\n".join(out)


def _last_exception(text: str) -> tuple[str, str]:
    """``(exc_type, message)`` of the last exception line in a pasted console output."""
    lines = text.splitlines()
    at = _last_exception_index(lines)
    last = lines[at].strip() if at is not None else ""
    exc_type, _, message = last.partition(":")
    return exc_type.strip(), message.strip()


def classify_traceback(text: str) -> Verdict:
    """Classify console output pasted from a failed run, as users post it in bug reports.

    The parent's traceback and its workers' stderr are interleaved in one text, so the
    mechanism is looked for in all of it, with the same rules as :func:`classify`:

    * terminal escapes are taken off first (:func:`strip_escapes`), and pytest's ``E`` prefix
      and rich's boxes (typer) are read as plain traceback text;
    * the final exception decides before any other: in a chained traceback ("During handling
      of the above exception, another exception occurred", "The above exception was the direct
      cause of the following exception"; ``Lib/traceback.py``) the first block printed is only
      a cause, so Python 3.14's ``AttributeError: module '__main__' has no attribute
      '<lambda>'`` under a ``PicklingError`` is ``pickle``; an exit exception a framework raised
      after it printed the error it caught (``SystemExit: True`` after ``unittest.main()``) is
      never the final one;
    * else the mechanisms in the priority order of the kinds, anywhere in the text;
    * a secondary error (``BrokenPipeError``, ``EOFError: Ran out of input``) is never the root
      cause when a worker printed its own, and "Caught X in DataLoader worker process N" is a
      ``worker-exception`` with the worker's original error; ``torch.multiprocessing.spawn``'s
      ``ProcessExitedException: process N terminated with signal S`` is ``worker-died``.

    Args:
        text: the whole output (str), any platform or Python version, coloured or not.

    Returns:
        A :class:`Verdict` with ``outcome`` ``error`` (``other`` when no error line is found).
    """
    text = _plain(text)
    lines = text.splitlines()
    sig = _WORKER_SIGNAL.search(text)
    exc_type, message = _last_exception(text)
    headline = f"{exc_type}: {message}" if message else exc_type
    spawn_sig = _SPAWN_SIGNAL.search(text)
    if spawn_sig:
        return Verdict("error", "worker-died", headline, spawn_sig.group(0).strip())
    caught = _WORKER_CAUGHT.search(text)
    kind, line = _kind_of(text)
    if caught and kind not in _CAUGHT_KINDS:
        after = text[caught.end():]
        original = after.split("Original Traceback", 1)[-1] if "Original Traceback" in after else after
        _, root = decisive_stderr_line(original)
        return Verdict("error", "worker-exception", f"{caught.group(1)}: {caught.group(0)}", root or caught.group(0))
    at = _last_exception_index(lines)
    if at is not None:
        final_kind, final_line = _kind_of(_final_block(lines, at))
        if final_kind:
            return Verdict("error", final_kind, headline or (final_line or ""), final_line or "")
    if kind:
        return Verdict("error", kind, headline or (line or ""), line or "")
    raised_in = _SPAWN_RAISED.search(text)
    if raised_in:
        _, original = decisive_stderr_line(text[raised_in.end():])
        return Verdict("error", "worker-exception", _with_spawn_headline(headline, raised_in.group(0), text),
                       original or headline)
    if _lost_process_object(text):  # only the child's half was pasted: the parent failed to pickle
        return Verdict("error", "pickle", headline, _LOST_LINE)
    if sig:
        return Verdict("error", "worker-died", headline, f"worker killed by signal: {sig.group(1)}")
    if _WORKER_EXITED.search(text) or _SPAWN_EXIT.search(text):
        return _from_worker(text, text, headline)
    _, line = decisive_stderr_line(text)
    return Verdict("error", "other", headline or line, line or headline)


#: Longest message and stderr tail a record keeps as evidence, in characters.
EVIDENCE_CHARS = 8000
#: Characters kept of a record's ``message`` and ``root_cause`` (one line each, normally short).
MESSAGE_CHARS = 2000


_CUT_NOTE = re.compile(r" \[… (\d+) characters cut\]\Z")


def clip(text: str, limit: int, *, keep: str = "head") -> str:
    """``text`` cut to at most about ``limit`` characters, saying how much was cut.

    Args:
        keep: ``head`` keeps the start (a message), ``tail`` keeps the end (a stderr tail).

    Returns:
        ``text`` itself when it fits; else its kept part plus ``[… N characters cut]``.
    """
    text = str(text)
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    earlier = _CUT_NOTE.search(text)  # already clipped (by the cell): count what it cut too
    if earlier and keep == "head":
        cut = len(earlier.string[:earlier.start()]) - limit + int(earlier.group(1))
    note = f"[… {cut} characters cut]"
    return f"{text[:limit]} {note}" if keep == "head" else f"{note} {text[-limit:]}"


class _RequiredEvidence(TypedDict):
    returncode: int | None
    timed_out: bool
    status: str | None
    exc_type: str
    message: str
    notes: list[str]


class Evidence(_RequiredEvidence, total=False):
    """A result record's ``evidence`` (``harness/schemas/shard.schema.json``), see :func:`evidence_of`."""

    require_check: bool
    system_exit: bool
    batches: int


def evidence_of(obs: Observation) -> Evidence:
    """The raw evidence a result record keeps, so a later classifier can re-derive its verdict.

    Returns:
        ``{"returncode", "timed_out", "status", "exc_type", "message", "notes"}``, plus
        ``batches`` (a count), ``require_check`` and ``system_exit`` when the cell reported
        them (a catalogue case with no checked batch is ``error``/``unchecked``); the
        stderr tail is kept beside it as the record's ``stderr_tail`` (the last
        :data:`EVIDENCE_CHARS` characters).
    """
    res: CellResult = obs.result or {}
    ev: Evidence = {
        "returncode": obs.returncode,
        "timed_out": obs.timed_out,
        "status": res.get("status") if obs.result is not None else None,
        "exc_type": res.get("exc_type", ""),
        "message": clip(res.get("message", ""), EVIDENCE_CHARS),
        "notes": [clip(n, 1000) for n in res.get("notes", [])][:20],
    }
    if res.get("require_check") is True:
        ev["require_check"] = True
    if res.get("system_exit") is True:
        ev["system_exit"] = True
    batches = res.get("batches")
    if "batches" in res:  # a case may set cell.batches to anything; keep a count or nothing
        ev["batches"] = batches if isinstance(batches, int) and not isinstance(batches, bool) and 0 <= batches < 10**9 else 0
    return ev


def reclassify(record: Mapping[str, object]) -> Verdict | None:
    """Re-derive a result record's verdict from its evidence with this classifier.

    Returns:
        The new :class:`Verdict`, or ``None`` when the record carries no evidence (results
        without a cell process, such as ``unsupported``, or shards written before evidence
        was kept).
    """
    ev = record.get("evidence")
    if not isinstance(ev, dict):
        return None
    result: CellResult | None = None
    if ev.get("status") is not None:
        result = {"status": ev["status"], "exc_type": ev.get("exc_type", ""),
                  "message": ev.get("message", ""), "notes": list(ev.get("notes", []))}
        if "batches" in ev:
            result["batches"] = ev["batches"]
        if "require_check" in ev:
            result["require_check"] = ev["require_check"]
        if "system_exit" in ev:
            result["system_exit"] = ev["system_exit"]
    tail = record.get("stderr_tail")
    obs = Observation(ev.get("returncode"), bool(ev.get("timed_out")), result, tail if isinstance(tail, str) else "")
    return classify(obs)
