"""Shards: one runner's results as JSON, written atomically and validated on read.

Shape (``harness/schemas/shard.schema.json``)::

    {"schema_version": 1, "complete": bool, "runner": {...}, "results": [{...}, ...]}
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from harness import __version__
from harness._policy import Platform, available_methods, current_os, default_method, machine_arch
from harness.child.fileio import replace_file, write_atomic
from harness.classify.classifier import EVIDENCE_CHARS, MESSAGE_CHARS, clip
from harness.errors import NotAShard, ShardError
from harness.shard.jsonfile import JSONFileError, load_json_file

__all__ = [
    "SCHEMA_VERSION",
    "CaseTable",
    "Record",
    "Runner",
    "Shard",
    "NotAShard",
    "ShardError",
    "clip_free_text",
    "read_shard",
    "replace_file",
    "runner_info",
    "schema",
    "shard_filename",
    "split_filename",
    "write_json_atomic",
]

SCHEMA_VERSION = 1

# JSON objects of a shard, named for what they are. Their keys and the types of their values are
# the schema's (harness/schemas/shard.schema.json, checked by read_shard); to Python a value is
# whatever JSON holds there.
#: A whole shard: ``schema_version``, ``complete``, ``runner``, ``cases``, ``results``.
Shard = dict[str, Any]
#: A shard's ``runner`` object (:func:`runner_info`).
Runner = dict[str, Any]
#: One result record: one cell on one runner (:func:`harness.run.records.record_for`).
Record = dict[str, Any]
#: A shard's ``cases``: each case's metadata by case id (:func:`harness.run.pipeline.case_table`).
CaseTable = dict[str, dict[str, Any]]
_SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


@cache
def schema(name: str = "shard") -> dict[str, Any]:
    """The published JSON Schema ``harness/schemas/<name>.schema.json`` (a JSON object)."""
    document: dict[str, Any] = json.loads((_SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return document


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _git_commit() -> str | None:
    try:
        # The checkout the run happens in (nox installs the project into site-packages).
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def runner_info(emulating: Platform | None = None, **extra: object) -> Runner:
    """Describe this machine as a shard's ``runner`` object; ``extra`` keys are added.

    Args:
        emulating: the platform profile the run emulates (:data:`harness._policy.PROFILES`),
            or ``None``. An emulating runner keeps its real ``os`` and adds ``emulates`` (the
            platform id) and ``profile`` (what was emulated); its ``start_methods`` and
            ``default_method`` are the emulated platform's, and its id ends in ``-as-<id>``.
    """
    os_name = current_os()
    arch = machine_arch()
    py = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    torch = _torch_version()
    rid = f"{os_name}-{arch}-py{sys.version_info.major}.{sys.version_info.minor}-torch{torch}"
    if emulating is not None:
        rid += f"-as-{emulating.id}"
    info: Runner = {
        "id": rid,
        "os": os_name,
        "arch": arch,
        "python": py,
        "python_implementation": platform.python_implementation(),
        "torch": torch,
        "start_methods": available_methods(emulating),
        "default_method": default_method(emulating),
        "harness_version": __version__,
        "git_commit": _git_commit(),
        "started_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu_count": os.cpu_count() or 1,
    }
    if emulating is not None:
        info["emulates"] = emulating.id
        info["profile"] = {
            "id": emulating.id,
            "methods": list(emulating.methods),
            "sharing_strategy": emulating.sharing_strategy,
            "temp_dir_chars": emulating.temp_dir_chars,
        }
    info.update(extra)
    return info


def shard_filename(runner: Runner) -> str:
    """File name for a runner's shard, from its os, arch, Python and torch versions."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", runner["id"]) + ".json"


def split_filename(runner: Runner, part: int, parts: int) -> str:
    """File name for part ``part`` of ``parts`` of a runner's shard (``harness run --split``):
    :func:`shard_filename` with ``.split-<part>-of-<parts>`` before ``.json``, so that it never
    collides with the runner's whole shard or with another part."""
    return shard_filename(runner).removesuffix(".json") + f".split-{part}-of-{parts}.json"


def write_json_atomic(path: Path, data: Mapping[str, object], *, compact: bool = False) -> None:
    """Write ``data`` as JSON to ``path`` through a temp file and a rename.

    ``compact``: one line, no indentation (the partial shard a run writes every few seconds:
    ``json`` encodes that in C, where an indented encoding runs in Python and costs about ten
    times as much); the same data either way.
    """
    # ASCII escapes round-trip any Python string, lone surrogates included (a non-UTF-8 file
    # name in a message); NaN and Infinity are not JSON.
    text = json.dumps(data, indent=None if compact else 1, ensure_ascii=True, allow_nan=False) + "\n"
    write_atomic(path, text.encode("ascii"))


#: Keys of a ``matrix.json`` written by ``harness report``: a report's own output, when
#: ``--out`` is the shard directory, is skipped rather than rejected.
_MATRIX_KEYS = frozenset({"schema_version", "generated_utc", "runners", "platforms", "results", "compatibility"})


def _short(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters (a schema message can quote a whole value)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _record_problem(data: Shard) -> str | None:
    """What the schema cannot say: a record of another runner, a cell recorded twice, or a split
    part beyond the number of parts."""
    rid = data["runner"]["id"]
    split = data["runner"].get("split")
    if split is not None and split["part"] > split["parts"]:
        return f"runner/split: part {split['part']} of {split['parts']} parts"
    seen: dict[tuple[str, str], int] = {}
    for i, rec in enumerate(data["results"]):
        if rec["runner"] != rid:
            return f"results/{i}: runner {_short(rec['runner'], 80)!r} is not this shard's runner {_short(rid, 80)!r}"
        key = (rec["case"], rec["method"])
        if key in seen:
            return (f"results/{i}: a second record for case {_short(rec['case'], 80)!r} [{rec['method']}] "
                    f"(the first is results/{seen[key]})")
        seen[key] = i
    return None


# Free text of a shard clipped on read when it is over the schema's maxLength (a shard from an
# older or another writer), to what ``harness run`` keeps (harness.run.records.record_for,
# harness.classify.classifier.evidence_of) with the same ``[… N characters cut]`` note:
# (key, characters kept, which end is kept). Items past a list's count are dropped as run drops them.
_RECORD_TEXT = (("message", MESSAGE_CHARS, "head"), ("root_cause", MESSAGE_CHARS, "head"),
                ("stderr_tail", EVIDENCE_CHARS, "tail"))
_EVIDENCE_TEXT = (("message", EVIDENCE_CHARS, "head"), ("exc_type", 500, "head"))
_CASE_TEXT = (("title", 500, "head"), ("why", 4000, "head"))
#: (key, characters kept per item, items kept) of the lists of free text.
_RECORD_LISTS = (("warnings", 500, 20),)
_EVIDENCE_LISTS = (("notes", 1000, 20),)
_CASE_LISTS = (("sources", 1000, 100),)


def _props(*path: str) -> dict[str, Any]:
    node = schema("shard")
    for key in path:
        node = node[key]
    return dict(node["properties"])


def _clip_object(obj: Any, props: dict[str, Any], texts: tuple[tuple[str, int, str], ...],
                 lists: tuple[tuple[str, int, int], ...], where: str, clipped: list[str]) -> None:
    """Clip ``obj``'s over-long strings (and lists of them) in place; name each in ``clipped``."""
    if not isinstance(obj, dict):
        return
    for key, keep, end in texts:
        value = obj.get(key)
        if isinstance(value, str) and len(value) > props[key]["maxLength"]:
            obj[key] = clip(value, keep, keep=end)
            clipped.append(f"{where}{key}")
    for key, keep, count in lists:
        items = obj.get(key)
        if not isinstance(items, list):
            continue
        schema_items = props[key]
        long = any(isinstance(v, str) and len(v) > schema_items["items"]["maxLength"] for v in items)
        if long or len(items) > schema_items.get("maxItems", len(items)):
            obj[key] = [clip(v, keep) if isinstance(v, str) else v for v in items][:count]
            clipped.append(f"{where}{key}")


def clip_free_text(data: Any) -> list[str]:
    """Clip, in place, every free-text field of a shard that is longer than the schema allows
    (a message, a root cause, an evidence message, a stderr tail, warnings and notes, a case's
    title, why and sources) to what ``harness run`` keeps, with the same ``[… N characters
    cut]`` note (:func:`harness.classify.classifier.clip`). Text within the schema's bounds is
    left as it is, so a valid shard reads back unchanged. Anything not shaped like a shard is
    left for the schema to refuse.

    Returns:
        Where text was clipped (``results/3/message``), in order.
    """
    clipped: list[str] = []
    if not isinstance(data, dict):
        return clipped
    result = _props("$defs", "result")
    evidence = _props("$defs", "result", "properties", "evidence")
    case = _props("$defs", "case")
    results = data.get("results")
    for i, rec in enumerate(results if isinstance(results, list) else ()):
        _clip_object(rec, result, _RECORD_TEXT, _RECORD_LISTS, f"results/{i}/", clipped)
        if isinstance(rec, dict):
            _clip_object(rec.get("evidence"), evidence, _EVIDENCE_TEXT, _EVIDENCE_LISTS,
                         f"results/{i}/evidence/", clipped)
    cases = data.get("cases")
    for cid, meta in (cases.items() if isinstance(cases, dict) else ()):
        _clip_object(meta, case, _CASE_TEXT, _CASE_LISTS, f"cases/{_short(str(cid), 80)}/", clipped)
    return clipped


def read_shard(path: Path, notes: list[str] | None = None) -> Shard:
    """Read and validate one shard.

    The file is read as by :func:`harness.shard.jsonfile.load_json_file`: a regular file only (a
    FIFO or device is never opened), at most :data:`~harness.shard.jsonfile.MAX_JSON_BYTES`, strict
    JSON (no ``NaN`` or ``Infinity``) nested at most :data:`~harness.shard.jsonfile.MAX_JSON_DEPTH`
    deep. Free text longer than the schema allows is clipped to what ``harness run`` keeps
    (:func:`clip_free_text`), not a reason to refuse the shard. Beyond the schema, every record
    must belong to the shard's runner and each (case, method) cell may appear once.

    Args:
        path: the shard file.
        notes: when given, one line is appended when free text was clipped, naming the file,
            how many fields and the first of them.

    Raises:
        NotAShard: the file is a ``matrix.json`` written by ``harness report``.
        ShardError: not a regular file, too large, unreadable, not JSON (or truncated, or not
            strict), a foreign JSON document, an unknown ``schema_version``, a schema violation,
            a record of another runner, a duplicate cell, or a split part beyond its number of
            parts. The message is one line naming ``path``.
    """
    path = Path(path)
    try:
        data = load_json_file(path)
    except JSONFileError as exc:
        raise ShardError(f"{path}: {exc}") from None
    if isinstance(data, dict) and "runner" not in data and _MATRIX_KEYS <= data.keys():
        raise NotAShard(f"{path}: a report's matrix.json, not a shard; skipped")
    if not isinstance(data, dict) or "schema_version" not in data or "runner" not in data:
        raise ShardError(f"{path}: not a harness shard (no schema_version/runner)")
    if data["schema_version"] != SCHEMA_VERSION:
        raise ShardError(f"{path}: unsupported schema_version {_short(repr(data['schema_version']), 40)} "
                         f"(this harness reads {SCHEMA_VERSION})")
    clipped = clip_free_text(data)
    if clipped and notes is not None:
        more = f" and {len(clipped) - 1} more" if len(clipped) > 1 else ""
        notes.append(f"{path}: over-long text clipped, as 'harness run' keeps it: {clipped[0]}{more}")
    validator = jsonschema.Draft202012Validator(schema("shard"))
    err = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if err is not None:
        where = _short("/".join(str(p) for p in err.absolute_path) or "(top level)", 120)
        raise ShardError(f"{path}: schema violation at {where}: {_short(err.message)}")
    problem = _record_problem(data)
    if problem is not None:
        raise ShardError(f"{path}: {problem}")
    return data
