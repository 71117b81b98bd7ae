"""JUnit XML for CI test reporting: one ``<testcase>`` per case × start method × runner.

Mapping (the JUnit format as read by common CI reporters, e.g. the Ant ``junitreport`` schema):

* one ``<testsuite>`` per runner (its id is the suite name; os, Python and torch are properties);
* ``classname`` is ``<family>.<case>``, ``name`` is ``<case>[<method>]``, ``time`` is the cell's
  ``duration_s`` (or its wall time when the loader never finished);
* an observed cell that contradicts its expectation is a ``<failure>``; a cell of a broken case
  (its in-process control failed) is an ``<error>``; ``skipped`` and ``unsupported`` cells are
  ``<skipped>``; every other cell passes, including expected errors.

Only observed cells appear: predicted cells of the compatibility view are not tests. Messages are
untrusted text: control characters and lone surrogates are spelled out as Python escapes
(:func:`harness._escape.visible`: ``\\x1b``, ``\\udcfe``), as is anything else XML 1.0 cannot
carry, and :mod:`xml.etree.ElementTree` escapes the rest.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from harness._escape import visible
from harness.classify.outcomes import outcome_label
from harness.report import JSONObject
from harness.report.views import contradiction

__all__ = ["junit_xml"]

# XML 1.0 "Char" production: tab, LF, CR, and U+0020 upwards minus surrogates and U+FFFE/U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str | None) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", visible(text or ""))


def _time(rec: JSONObject) -> float:
    value = rec.get("duration_s")
    if value is None:
        value = rec.get("wall_s")
    return float(value or 0.0)


def _counts() -> dict[str, float]:
    return {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}


def _set_counts(element: ET.Element, counts: dict[str, float]) -> None:
    for key, value in counts.items():
        element.set(key, f"{value:.4f}" if key == "time" else str(value))


def _testcase(suite: ET.Element, rec: JSONObject, matrix: JSONObject) -> str | None:
    """Add one cell's ``<testcase>`` to ``suite``; return the count it adds to besides
    ``tests`` (``errors``, ``failures`` or ``skipped``), or ``None`` for a pass."""
    family = rec.get("family") or matrix["cases"].get(rec["case"], {}).get("family", "unknown")
    case = ET.SubElement(suite, "testcase", classname=_clean(f"{family}.{rec['case']}"),
                         name=_clean(f"{rec['case']}[{rec['method']}]"), time=f"{_time(rec):.4f}")
    detail = rec.get("root_cause") or rec.get("message") or ""
    counted = None
    if rec.get("broken"):
        counted = "errors"
        el = ET.SubElement(case, "error", type="broken-case",
                           message=_clean(f"broken case: its in-process control did not pass; "
                                          f"this cell observed {outcome_label(rec['outcome'], rec.get('kind'))}"))
        el.text = _clean(rec.get("stderr_tail") or detail)
    elif not rec.get("matches", True):
        counted = "failures"
        el = ET.SubElement(case, "failure", type="mismatch", message=_clean(f"{contradiction(rec)}: {detail}"))
        el.text = _clean(rec.get("stderr_tail") or detail)
    elif rec["outcome"] in ("skipped", "unsupported"):
        counted = "skipped"
        ET.SubElement(case, "skipped", message=_clean(f"{rec['outcome']}: {detail}"))
    if rec.get("warnings"):
        out = ET.SubElement(case, "system-err")
        out.text = _clean("\n".join(rec["warnings"]))
    return counted


def _suite(root: ET.Element, runner: JSONObject, recs: list[JSONObject], matrix: JSONObject) -> dict[str, float]:
    """Add one runner's ``<testsuite>`` (its properties, then one test case per cell); return its counts."""
    suite = ET.SubElement(root, "testsuite", name=_clean(runner["id"]))
    props = ET.SubElement(suite, "properties")
    for key in ("os", "arch", "python", "torch", "default_method", "git_commit", "started_utc"):
        if runner.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=_clean(str(runner[key])))
    counts = _counts()
    for rec in recs:
        counted = _testcase(suite, rec, matrix)
        counts["tests"] += 1
        counts["time"] += _time(rec)
        if counted is not None:
            counts[counted] += 1
    _set_counts(suite, counts)
    return counts


def junit_xml(matrix: JSONObject) -> bytes:
    """Serialise the matrix's observed cells as a JUnit XML document.

    Args:
        matrix: the merged matrix (``runners`` and ``results``).

    Returns:
        UTF-8 encoded XML with a declaration, rooted at ``<testsuites>``.
    """
    by_runner: dict[str, list[JSONObject]] = defaultdict(list)
    for rec in matrix["results"]:
        by_runner[rec["runner"]].append(rec)
    root = ET.Element("testsuites", name="harness")
    totals = _counts()
    for runner in matrix["runners"]:
        counts = _suite(root, runner, by_runner.get(runner["id"], []), matrix)
        for key, value in counts.items():
            totals[key] += value
    _set_counts(root, totals)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"
