"""harness._escape: the one choke point for untrusted text in Markdown and on a terminal."""

from __future__ import annotations

import re

import pytest
from _outputs import unescaped_pipes

from harness._escape import code, markdown, terminal, visible
from harness.catalogue.discover import discover

IMG = "<img src=x onerror=alert(1)>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a|b", "a\\|b"),
        ("back\\slash", "back\\\\slash"),
        ("`tick`", "\\`tick\\`"),
        (IMG, "&lt;img src=x onerror=alert(1)&gt;"),
        ("&amp; &", "&amp;amp; &amp;"),
        ("*bold* [link](u) ![i](s)", "\\*bold\\* \\[link\\](u) !\\[i\\](s)"),
        ("line\nnext\r\tend", "line next  end"),
        ("x\udcfey", "x\\udcfey"),
        ("\x1b[31mred\x1b[0m", "\\x1b\\[31mred\\x1b\\[0m"),
        ("# heading", "\\# heading"),
        ("- item", "\\- item"),
        ("12. item", "12\\. item"),
        ("__main__.f", "\\_\\_main\\_\\_.f"),
        ("_em_ and *strong*", "\\_em\\_ and \\*strong\\*"),
        ("\\|", "\\\\\\|"),
    ],
)
def test_markdown_escapes_what_is_dangerous(text, expected):
    assert markdown(text) == expected
    assert "\n" not in markdown(text) and unescaped_pipes(markdown(text)) == 0


@pytest.mark.parametrize("text", ["transform-lambda", "dataset_open_file", "cannot pickle '_thread.lock' object",
                                  "_io.BufferedReader name='x-_y.bin'",
                                  "Python 3.14 makes forkserver the default", "é_ü (ok), 2.13.0+cpu"])
def test_markdown_leaves_ordinary_text_alone(text):
    assert markdown(text) == text


def test_every_catalogue_id_and_fix_stays_a_plain_code_span():
    for case in discover().cases:
        assert code(case.id) == f"`{case.id}`"
        assert markdown(case.family) == case.family
        if case.fix:
            assert code(case.fix) == f"`{case.fix}`"


@pytest.mark.parametrize("text", ["a`b", "a|b", IMG, "new\nline", "", " padded ", "x\udcfe", "\\", "a\x1bb",
                                  "``` fence"])
def test_code_falls_back_to_escaped_text_when_a_span_could_break(text):
    out = code(text)
    assert out == markdown(text)
    assert not out.startswith("`") and "<" not in out and unescaped_pipes(out) == 0 and "\n" not in out


def test_code_fallback_escapes_every_boundary_underscore():
    # The fallback shares its line with markdown() text; neither may open emphasis the other closes.
    assert code("_a|") == "\\_a\\|"
    assert markdown("_a") == "_a"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("over\rwrite", "over\\x0dwrite"),
        ("bell\x07 c1\x9b del\x7f", "bell\\x07 c1\\x9b del\\x7f"),
        ("x\udcfe", "x\\udcfe"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("keep\ttab\nnewline", "keep\ttab\nnewline"),
        ("ordinary – text ✅", "ordinary – text ✅"),
    ],
)
def test_terminal_spells_out_control_characters(text, expected):
    assert terminal(text) == expected
    terminal(text).encode("utf-8")  # never raises


def test_terminal_one_line():
    assert terminal("a\nb\tc\x1b", one_line=True) == "a\\nb\\tc\\x1b"


def test_visible_output_has_no_control_character_or_surrogate():
    everything = "".join(chr(c) for c in range(0x110000))
    out = visible(everything)
    out.encode("utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
