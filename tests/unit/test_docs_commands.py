"""Every command the README and the docs show is one the tools accept.

Each ``harness ...`` line of a console block is parsed by the real CLI parser
(:func:`harness._cli.build_parser`): an option renamed or removed, a start method or profile
misspelt, a ``--split`` value out of range, fails here with the file and the line. Each
``nox -s ...`` names sessions the noxfile defines. The commands that the recipes run end to end
are run by ``tests/e2e/test_readme_recipes.py``, ``test_lint_cli.py``, ``test_pytest_plugin.py``
and the package session; this test holds the rest to the parser.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from harness._cli import build_parser
from harness.errors import HarnessError

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The CLI's subcommands; a line such as ``harness lint: c.py: ...`` is output, not a command.
SUBCOMMANDS = {name for a in build_parser()._actions if a.choices and hasattr(a, "add_parser")
               for name in a.choices}
FENCE = re.compile(r"^(`{3,})(console|text|bash|shell|sh)\n(.*?)^\1$", re.M | re.S)


def _commands(page: Path) -> list[tuple[int, str]]:
    """``(line number, command)`` of every shell command in the page's console blocks."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        first = text.count("\n", 0, m.start(3)) + 1
        lines = m.group(3).splitlines()
        prompted = any(line.startswith("$ ") for line in lines)
        for i, line in enumerate(lines):
            if prompted and not line.startswith("$ "):
                continue  # output shown under a prompt
            line = line[2:] if line.startswith("$ ") else line
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith("#") and not line.startswith("# or"):
                continue
            line = re.sub(r"^# or(?:, without nox)?:\s*", "", line)
            for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
                words = part.split()
                if part.startswith(("nox ", "python -m nox ")) or (
                        part.startswith(("harness ", "python -m harness "))
                        and words[words.index("harness") + 1] in SUBCOMMANDS | {"--version", "--help", "-h"}):
                    out.append((first + i, part))
    return out


CASES = [(page, n, cmd) for page in PAGES for n, cmd in _commands(page)]


def test_the_pages_show_commands():
    assert len(CASES) > 30
    assert {page.name for page, _, _ in CASES} >= {"README.md", "getting-started.md", "lint.md", "own-code.md"}


@pytest.mark.parametrize("page, line, command", [c for c in CASES if "harness " in c[2]],
                         ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_every_harness_command_is_accepted_by_the_cli(page, line, command):
    argv = shlex.split(command)
    argv = argv[argv.index("harness") + 1:]
    parser = build_parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as exc:
        assert exc.code == 0, f"{page.relative_to(ROOT)}:{line}: {command!r}: {err.getvalue().strip()}"
    except HarnessError as exc:  # the CLI's parser reports a bad option as a usage error
        pytest.fail(f"{page.relative_to(ROOT)}:{line}: {command!r}: {exc}")


def _nox_sessions() -> set[str]:
    """The sessions of this noxfile and of the sample project's (the recipes show its own)."""
    source = "\n".join((d / "noxfile.py").read_text(encoding="utf-8") for d in (ROOT, ROOT / "tests" / "data" / "downstream"))
    names = set(re.findall(r"@nox\.session[^\n]*\ndef (\w+)\(", source))
    parametrized = set(re.findall(r"@nox\.session\(python=[^\n]*\ndef (\w+)\(", source))
    return names | {f"{n}-3.{m}" for n in parametrized for m in range(10, 16)}


@pytest.mark.parametrize("page, line, command", [c for c in CASES if "nox " in c[2]],
                         ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_every_nox_command_names_sessions_that_exist(page, line, command):
    argv = shlex.split(command)
    if "-s" not in argv:
        pytest.skip("no session named")
    sessions = []
    for token in argv[argv.index("-s") + 1:]:
        if token.startswith("-"):
            break
        sessions.append(token)
    unknown = [s for s in sessions if s not in _nox_sessions()]
    assert sessions and unknown == [], f"{page.relative_to(ROOT)}:{line}: {command!r}: no session {unknown}"
