"""``harness lint`` speed: files per second on a real tree of at least 1,000 Python files, and
the ratio to TorchFix (pytorch-labs/torchfix, the PyTorch linter) on the same tree, measured in
the same run.

The tree is the installed ``torch`` package (real, varied code: about 2,000 ``.py`` files for
torch 2.13), or ``--tree DIR``. Each tool runs as a user runs it, as a new process, ``--repeat``
times (default 3) in alternation; medians are reported. TorchFix is measured only where its
``torchfix`` command is installed (``pip install torchfix``); otherwise its figures are ``None``.

``python -m benchmarks.bench_lint [--tree DIR] [--repeat N]`` prints one JSON object:
``{"tree", "files", "lint_s", "lint_files_per_s", "torchfix_s", "torchfix_files_per_s",
"ratio", "target_ratio", "target_s", "findings"}``; ``ratio`` is ``lint_s / torchfix_s`` (target:
at most 1.0, at least as fast) and ``target_s`` the 10 s bound of the lint on such a tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["run_benchmark"]

TARGET_RATIO = 1.0
TARGET_S = 10.0


def _default_tree() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _count(tree: Path) -> int:
    from harness.lint.sources import iter_files

    return sum(1 for p in iter_files([tree]) if p.suffix == ".py")


def _time(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - start, proc


def run_benchmark(tree: Path | None = None, repeat: int = 3) -> dict:
    """Time ``harness lint`` and TorchFix on ``tree`` (default: the installed torch package).

    Raises:
        RuntimeError: no tree (torch not installed and none given), or ``harness lint`` failed.
    """
    tree = tree or _default_tree()
    if tree is None or not tree.is_dir():
        raise RuntimeError("no tree to lint: install torch or give --tree DIR")
    files = _count(tree)
    lint_cmd = [sys.executable, "-m", "harness", "lint", "--format", "json", str(tree)]
    torchfix = shutil.which("torchfix")
    lint_times: list[float] = []
    fix_times: list[float] = []
    findings = None
    for _ in range(repeat):
        seconds, proc = _time(lint_cmd)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"harness lint failed ({proc.returncode}): {proc.stderr[-500:]}")
        findings = len(json.loads(proc.stdout)["findings"])
        lint_times.append(seconds)
        if torchfix:
            seconds, _ = _time([torchfix, str(tree)])
            fix_times.append(seconds)
    lint_s = statistics.median(lint_times)
    fix_s = statistics.median(fix_times) if fix_times else None
    return {
        "tree": str(tree), "files": files, "findings": findings,
        "lint_s": round(lint_s, 3), "lint_files_per_s": round(files / lint_s, 1),
        "torchfix_s": round(fix_s, 3) if fix_s else None,
        "torchfix_files_per_s": round(files / fix_s, 1) if fix_s else None,
        "ratio": round(lint_s / fix_s, 3) if fix_s else None,
        "target_ratio": TARGET_RATIO, "target_s": TARGET_S,
    }


def main(argv: list[str] | None = None) -> int:
    """Print :func:`run_benchmark` as JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_lint")
    parser.add_argument("--tree", type=Path, default=None, help="a folder of Python files (default: torch's)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(run_benchmark(args.tree, max(1, args.repeat)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
