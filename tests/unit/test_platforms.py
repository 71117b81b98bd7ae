"""The compatibility view: platform defaults from the policy table, observed vs predicted cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shards import derive, linux_shard, windows_shard

from harness._policy import PLATFORMS, platform_of, platform_of_runner, resolve_method_alias
from harness.report.merge import merge, validate_matrix
from harness.report.platforms import compatibility, platform_summary


def _merged(*shards: dict) -> dict:
    return merge([(Path(f"{s['runner']['id']}.json"), s) for s in shards])


def _cells(matrix: dict, case: str) -> dict[str, dict]:
    return {c["platform"]: c for c in matrix["compatibility"] if c["case"] == case}


@pytest.mark.parametrize(("os_name", "python", "platform", "default", "methods"), [
    # CPython docs, "Contexts and start methods": POSIX default fork until 3.13, forkserver
    # from 3.14 (gh-84559); macOS spawn since 3.8; Windows has spawn only.
    ("linux", (3, 10), "linux-py<=3.13", "fork", {"fork", "spawn", "forkserver"}),
    ("linux", (3, 13), "linux-py<=3.13", "fork", {"fork", "spawn", "forkserver"}),
    ("linux", (3, 14), "linux-py>=3.14", "forkserver", {"fork", "spawn", "forkserver"}),
    ("macos", (3, 12), "macos", "spawn", {"fork", "spawn", "forkserver"}),
    ("windows", (3, 14), "windows", "spawn", {"spawn"}),
])
def test_policy_table(os_name, python, platform, default, methods):
    plat = platform_of(os_name, python)
    assert (plat.id, plat.default_method, set(plat.methods)) == (platform, default, methods)
    assert platform_of_runner({"os": os_name, "python": f"{python[0]}.{python[1]}.1"}) is plat
    assert resolve_method_alias(platform) == default


def test_every_column_present_and_in_policy_order():
    matrix = _merged(linux_shard())
    assert [p["id"] for p in matrix["platforms"]] == [p.id for p in PLATFORMS]
    cases = {r["case"] for r in matrix["results"]}
    assert len(matrix["compatibility"]) == 4 * len(cases)
    assert validate_matrix(matrix) == []


def test_own_runner_observes_other_columns_predicted_same_os_first():
    linux = linux_shard()
    win = windows_shard(linux)
    matrix = _merged(win, linux)  # order must not matter: the Linux runner is the closer source
    cells = _cells(matrix, "entry-no-main-guard")
    assert cells["linux-py<=3.13"]["provenance"] == "observed"
    assert cells["windows"]["provenance"] == "observed"
    # Python 3.14's forkserver is predicted from Linux forkserver (the Windows one is unsupported).
    assert (cells["linux-py>=3.14"]["provenance"], cells["linux-py>=3.14"]["runner"]) == ("predicted", linux["runner"]["id"])
    assert (cells["linux-py>=3.14"]["outcome"], cells["linux-py>=3.14"]["kind"]) == ("error", "bootstrap")
    assert cells["macos"]["provenance"] == "predicted" and cells["macos"]["method"] == "spawn"


def test_a_py314_runner_makes_its_column_observed_and_is_preferred_for_linux_predictions():
    linux = linux_shard()
    py314 = derive(linux, os_name="linux", python="3.14.0", default="forkserver")
    macos = derive(linux, os_name="macos", python="3.14.0")
    matrix = _merged(linux, py314, macos)
    cells = _cells(matrix, "transform-lambda")
    assert cells["linux-py>=3.14"] == {
        "case": "transform-lambda", "platform": "linux-py>=3.14", "method": "forkserver", "outcome": "error",
        "kind": "pickle", "provenance": "observed", "runner": py314["runner"]["id"], "matches": True,
    }
    assert cells["macos"]["provenance"] == "observed" and cells["macos"]["runner"] == macos["runner"]["id"]
    # No Windows runner: spawn predicted from a runner with the closest Python (3.14).
    assert cells["windows"]["provenance"] == "predicted"
    assert cells["windows"]["runner"] in {py314["runner"]["id"], macos["runner"]["id"]}


def test_unsupported_never_predicts_and_missing_cases_have_no_cell():
    win = windows_shard()
    matrix = _merged(win)
    fork_cols = [c for c in matrix["compatibility"] if c["method"] in ("fork", "forkserver")]
    assert fork_cols == []  # Windows' fork/forkserver are unsupported: nothing to predict Linux from
    assert {c["platform"] for c in matrix["compatibility"]} == {"windows", "macos"}
    assert all(c["outcome"] != "unsupported" for c in matrix["compatibility"])


def test_several_runners_of_one_column_newest_wins_and_disagreement_is_kept():
    old = derive(linux_shard(), os_name="linux", python="3.10.14", torch="2.9.1+cpu")
    new = linux_shard()
    for rec in old["results"]:
        if rec["case"] == "transform-lambda" and rec["method"] == "fork":
            rec.update(outcome="hang", kind=None, matches=False)
    cells = _cells(_merged(old, new), "transform-lambda")
    col = cells["linux-py<=3.13"]
    assert col["runner"] == new["runner"]["id"] and col["outcome"] == "pass"
    assert col["disagree"] == [{"runner": old["runner"]["id"], "outcome": "hang", "kind": None}]


def test_platform_summary_lists_observed_runners_newest_first():
    a = derive(linux_shard(), os_name="linux", python="3.10.14")
    b = linux_shard()
    summary = {p["id"]: p for p in platform_summary([a["runner"], b["runner"]])}
    assert summary["linux-py<=3.13"]["observed_runners"] == [b["runner"]["id"], a["runner"]["id"]]
    assert summary["macos"]["observed_runners"] == []
    assert compatibility([], []) == []


def _emulating(shard: dict, profile: str) -> dict:
    """``shard`` as ``harness run --profile PROFILE`` writes it on the same Linux machine."""
    import copy

    from harness._policy import PROFILES

    out = derive(shard, os_name="linux", python=shard["runner"]["python"],
                 methods=PROFILES[profile].methods, default="spawn")
    out = copy.deepcopy(out)
    rid = out["runner"]["id"] + f"-as-{profile}"
    out["runner"].update(id=rid, emulates=profile,
                         profile={"id": profile, "methods": list(PROFILES[profile].methods),
                                  "sharing_strategy": "file_system", "temp_dir_chars": PROFILES[profile].temp_dir_chars})
    for rec in out["results"]:
        rec["runner"] = rid
    return out


def test_an_emulating_runner_is_emulated_never_observed():
    linux = linux_shard()
    mac = _emulating(linux, "macos")
    assert platform_of_runner(mac["runner"]) is None  # its real OS is Linux, but it observes nothing
    matrix = _merged(linux, mac)
    assert validate_matrix(matrix) == []
    cells = _cells(matrix, "transform-lambda")
    assert (cells["macos"]["provenance"], cells["macos"]["runner"]) == ("emulated", mac["runner"]["id"])
    assert cells["linux-py<=3.13"]["provenance"] == "observed"
    assert cells["linux-py<=3.13"]["runner"] == linux["runner"]["id"]
    # Nothing emulates Windows or Linux 3.14: predicted, and never from the emulating runner.
    assert cells["windows"]["provenance"] == "predicted" and cells["windows"]["runner"] == linux["runner"]["id"]
    plats = {p["id"]: p for p in matrix["platforms"]}
    assert plats["macos"]["emulated_runners"] == [mac["runner"]["id"]] and plats["macos"]["observed_runners"] == []


def test_an_observed_runner_wins_over_an_emulated_one():
    linux = linux_shard()
    matrix = _merged(_emulating(linux, "windows"), windows_shard(linux), linux)
    assert _cells(matrix, "transform-lambda")["windows"]["provenance"] == "observed"


def test_markdown_shows_the_three_provenances_apart():
    from harness.report.markdown import render_markdown

    linux = linux_shard()
    md = render_markdown(_merged(linux, _emulating(linux, "macos")))
    section = md.split("## What you get by default", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| `transform-lambda` |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "✅" and cells[3].endswith("‡") and cells[2].startswith("*") and cells[2].endswith("†")
    assert "emulated (‡) on `linux-x86_64-py3.11-torch2.13.0+cpu-as-macos` with its profile (start methods" in section
