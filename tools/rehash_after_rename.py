"""Carry the committed shards' input hashes across the rename of the built-in catalogue's
package from ``cases`` to ``harness_cases`` (0.1.0, before its first release).

A result's ``inputs`` (:mod:`harness.run.inputs`) hashes the case's files by their paths
and contents, so the rename changes every hash while changing no behaviour. A result's new
hash is written only where both hold, so nothing is claimed that was not observed:

1. its recorded hash equals the hash of the tree *before* the rename (computed by that
   tree's own harness): the cell was observed on exactly those inputs;
2. each of its input files, and each harness file that runs in a cell, is the same file
   after the rename up to the rename itself: with ``cases.`` and ``cases/`` spelled
   ``harness_cases.`` and ``harness_cases/``, the old and the new file hold the same lines
   (the import sorter moved ``from harness_cases...`` below ``from harness...``), and the
   harness and classifier versions are equal.

Any other result keeps its hash, which no longer matches: ``harness run --changed`` reruns it.

Usage (from the checkout, after the rename)::

    git worktree add /tmp/before-rename <commit before the rename>
    python tools/rehash_after_rename.py /tmp/before-rename reports/shards/*.json
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

#: Run in a tree's own interpreter path: its harness computes every record's hash, and names
#: each case's input files (relative to the catalogue's parent) and the cell files.
_HASHES = r"""
import json, sys
from pathlib import Path
import harness
from harness.catalogue.discover import discover
from harness.classify.classifier import CLASSIFIER_VERSION
from harness.classify.outcomes import METHODS
from harness.run.inputs import HARNESS_CELL_FILES, InputHasher
from harness.run.plan import plan
out = {"harness_file": harness.__file__, "version": harness.__version__,
       "classifier": CLASSIFIER_VERSION, "shards": {}, "files": {},
       "cell_files": [str(p) for p in HARNESS_CELL_FILES]}
cases = discover().cases
for shard_path in sys.argv[1:]:
    runner = json.loads(Path(shard_path).read_text(encoding="utf-8"))["runner"]
    hasher = InputHasher(runner)
    specs = plan(cases, METHODS, runner.get("timeout_s", 60.0),
                 timeout_scale=runner.get("timeout_scale", 1.0), profile=(runner.get("profile") or {}).get("id"))
    out["shards"][shard_path] = {f"{s.case.id}|{s.method}": hasher.cell(s.case, s.method, s.num_workers, s.timeout_s)
                                 for s in specs}
    for c in cases:
        out["files"][c.id] = [str(p) for p in hasher.case_files(c)]
print(json.dumps(out))
"""

_RENAMED = re.compile(r"\bcases([./])")


def _hashes(tree: Path, shards: list[Path]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", _HASHES, *map(str, shards)], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    data: dict[str, Any] = json.loads(proc.stdout)
    if not Path(data["harness_file"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: its harness was not the one imported ({data['harness_file']})")
    return data


def _same_up_to_rename(old: Path, new: Path) -> bool:
    before = _RENAMED.sub(r"harness_cases\1", old.read_text(encoding="utf-8")).splitlines()
    return Counter(before) == Counter(new.read_text(encoding="utf-8").splitlines())


def _equivalent(old_tree: Path, new_tree: Path, old_files: list[str], new_files: list[str]) -> bool:
    rel_old = sorted(_RENAMED.sub(r"harness_cases\1", str(Path(p).relative_to(old_tree))) for p in old_files)
    rel_new = sorted(str(Path(p).relative_to(new_tree)) for p in new_files)
    if rel_old != rel_new:
        return False
    return all(_same_up_to_rename(Path(p), new_tree / _RENAMED.sub(r"harness_cases\1", str(Path(p).relative_to(old_tree))))
               for p in old_files)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    old_tree, new_tree = Path(argv[0]).resolve(), Path.cwd().resolve()
    shards = [Path(p).resolve() for p in argv[1:]]
    old, new = _hashes(old_tree, shards), _hashes(new_tree, shards)
    if (old["version"], old["classifier"]) != (new["version"], new["classifier"]):
        raise SystemExit("the harness or classifier version changed: re-observe instead")
    cells_same = all(_same_up_to_rename(Path(o), Path(n)) for o, n in zip(old["cell_files"], new["cell_files"], strict=True))
    for shard in shards:
        data = json.loads(shard.read_text(encoding="utf-8"))
        counts: Counter[str] = Counter()
        for rec in data["results"]:
            key = f"{rec['case']}|{rec['method']}"
            recorded = rec.get("inputs")
            if recorded is None or recorded != old["shards"][str(shard)].get(key):
                counts["stale (not observed on the tree before the rename)"] += 1
            elif not cells_same or not _equivalent(old_tree, new_tree, old["files"][rec["case"]],
                                                   new["files"].get(rec["case"], [])):
                counts["inputs changed beyond the rename"] += 1
            else:
                rec["inputs"] = new["shards"][str(shard)][key]
                counts["re-hashed"] += 1
        text = json.dumps(data, indent=1, ensure_ascii=True, allow_nan=False) + "\n"
        shard.write_text(text, encoding="ascii")
        print(f"{shard.name}: " + ", ".join(f"{n} {what}" for what, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
