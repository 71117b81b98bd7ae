"""One place that makes untrusted text safe for where it goes: Markdown, a terminal, HTML, XML.

Shards come from other machines and carry exception messages, file names and stderr; any of it
may hold Markdown or HTML markup, ANSI escape sequences, control characters, or lone surrogates
(a non-UTF-8 file name decoded with :func:`os.fsdecode`). Every renderer passes such text
through one of these functions:

* :func:`markdown`: inline text in a GitHub-flavoured Markdown table cell, list item or footnote;
* :func:`code`: an identifier shown as a Markdown code span when that is safe, else as
  :func:`markdown` text;
* :func:`terminal`: a line printed to a terminal;
* :func:`visible`: the common part: control characters, Unicode line separators, bidi overrides
  and lone surrogates written as Python escapes (``\\x1b``, ``\\u202e``, ``\\udcfe``), so the
  text encodes as UTF-8 and shows what it held.

Ordinary text (letters, digits, ``-``, ``.``, ``_`` inside a word, spaces, non-ASCII letters)
passes through unchanged.
"""

from __future__ import annotations

import re

__all__ = ["code", "markdown", "terminal", "visible"]

# C0 controls but tab and newline, DEL, C1 controls, line/paragraph separators, bidi controls
# (embeddings, overrides, isolates, marks), and lone surrogates.
_INVISIBLE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_VISIBLE_RE = re.compile(f"[{_INVISIBLE}]")
_VISIBLE_LINE_RE = re.compile(f"[{_INVISIBLE}\t\n]")

# Markdown: a character that can start markup or end a table cell, an ampersand, whitespace that
# would end the line, and what visible() escapes. Underscores are decided separately.
_MD_RE = re.compile(f"[\\\\|`*\\[\\]<>&\t\n\r{_INVISIBLE}]")
# An underscore that is not inside a word: only those can open or close emphasis.
_MD_UNDERSCORE_RE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_MD_CHARS = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "\t": " ", "\n": " ", "\r": " "}
# A line that starts with one of these would open a heading, list or block quote in a list item.
_MD_LEADING_RE = re.compile(r"^([ ]*)([#+\-=]|[0-9]{1,9}(?=[.)]))")


def _escape_char(ch: str) -> str:
    code_point = ord(ch)
    if code_point < 0x100:
        return f"\\x{code_point:02x}"
    return f"\\u{code_point:04x}"


def visible(text: str) -> str:
    """``text`` with every character a reader cannot see, or UTF-8 cannot encode, spelled out.

    C0 and C1 control characters other than tab and newline (so ``ESC``, which starts an ANSI
    sequence, becomes ``\\x1b``), DEL, the Unicode line and paragraph separators, bidi controls
    and lone surrogates become their Python escapes. The result always encodes as UTF-8.
    """
    return _VISIBLE_RE.sub(lambda m: _escape_char(m.group()), text)


def terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` made safe to print to a terminal: :func:`visible`, so no escape sequence,
    carriage return or lone surrogate reaches the terminal.

    Args:
        text: any Python string.
        one_line: also write newlines and tabs as ``\\n`` and ``\\t``, so the result is one line
            (for messages that name a file, whose name may contain a newline).
    """
    if one_line:
        return _VISIBLE_LINE_RE.sub(
            lambda m: {"\n": "\\n", "\t": "\\t"}.get(m.group()) or _escape_char(m.group()), text)
    return visible(text)


def _md_char(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _MD_CHARS:
        return _MD_CHARS[ch]
    if _VISIBLE_RE.match(ch):
        return _escape_char(ch)
    return "\\" + ch


def _may_emphasise(text: str) -> bool:
    """Whether a run of ``_`` in ``text`` could open emphasis that a later run could close.

    CommonMark's flanking rules, erring towards yes: a run can open unless a letter or digit
    precedes it or whitespace follows it, and close unless whitespace precedes it or a letter
    or digit follows it. ``text`` is already escaped, so its neighbours are what a renderer sees.
    """
    opened = False
    for run in re.finditer("_+", text):
        before = text[run.start() - 1] if run.start() else " "
        after = text[run.end()] if run.end() < len(text) else " "
        if opened and not before.isspace() and not after.isalnum():
            return True
        opened = opened or (not after.isspace() and not before.isalnum())
    return False


def _markdown(text: str, every_underscore: bool) -> str:
    out = _MD_RE.sub(_md_char, text)
    if "_" in out and (every_underscore or _may_emphasise(out)):
        out = _MD_UNDERSCORE_RE.sub(r"\\_", out)
    return _MD_LEADING_RE.sub(lambda m: f"{m.group(1)}\\{m.group(2)}" if not m.group(2).isdigit()
                              else f"{m.group(1)}{m.group(2)}\\", out, count=1)


def markdown(text: str) -> str:
    """``text`` as inline GitHub-flavoured Markdown that renders as the same characters.

    Safe inside a table cell, a list item or a footnote: ``|``, backslash, backticks, ``*``,
    ``[`` and ``]`` are backslash-escaped; ``<``, ``>`` and ``&`` become entities (no raw HTML,
    no autolink, no entity); newlines and tabs become spaces; a leading ``#``, ``+``, ``-``,
    ``=`` or ``1.`` cannot start a block; control characters and lone surrogates are spelled
    out as by :func:`visible`. Underscores at a word boundary are escaped when the text holds
    a pair that could emphasise (``__main__``), and left alone otherwise (``'_thread.lock'``),
    so one call's result cannot start or end emphasis: use one call per table cell, list item
    or footnote.
    """
    return _markdown(text, every_underscore=False)


def code(text: str) -> str:
    """``text`` as a Markdown code span (`` `text` ``) when that is safe, else as :func:`markdown`.

    A code span shows its content literally, but a ``|`` still ends a table cell, a backtick
    ends the span, and ``<`` is raw in the file; so any text with a backtick, ``|``, ``<``,
    ``>``, a backslash, a character that is not printable, or leading or trailing spaces (which
    a code span strips) is shown as escaped plain text instead.
    """
    if text and text.isprintable() and text.strip() == text and not any(ch in text for ch in "`|<>\\"):
        return f"`{text}`"
    # Every underscore: this text may share its line with a markdown() call.
    return _markdown(text, every_underscore=True)
