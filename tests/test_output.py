"""Text output (kubectl_aicr.output): untrusted text made visible, alignment."""

from kubectl_aicr import output


def test_controls_bidi_and_separators_are_escaped():
    hostile = "a\x1b[31mred\x1b]0;title\x07\rb\x08c\nd\x7f\x9b\u202eevil\u2066\u2028e\tf"
    shown = output.safe(hostile)
    assert shown == ("a\\x1b[31mred\\x1b]0;title\\x07\\x0db\\x08c\\x0ad\\x7f\\x9b\\u202eevil\\u2066"
                     "\\u2028e\\x09f")
    assert all(ord(ch) >= 0x20 and not 0x7f <= ord(ch) <= 0x9f for ch in shown)


def test_plain_unicode_is_kept():
    assert output.safe("Jürgen — 東京") == "Jürgen — 東京"


def test_empty_is_none_marker():
    assert output.safe(None) == "<none>" and output.safe("") == "<none>"


def test_a_missing_value_is_shown_as_none_and_left_to_the_writer_to_escape():
    assert output.or_none(None) == "<none>" and output.or_none("") == "<none>"
    assert output.or_none(0) == "0" and output.or_none(False) == "False"
    assert output.or_none("a\x1b[2J") == "a\x1b[2J"  # escaping is the writer's job, once


def test_printable_means_nothing_would_be_escaped():
    assert output.printable("Jürgen — 東京") and output.printable("")
    assert not output.printable("a\x1b") and not output.printable("\u202e") and not output.printable("a\nb")


def test_fields_align_values():
    lines = output.fields([("Name", "a"), ("Starting inventory", "b")])
    assert lines == ["Name:                a", "Starting inventory:  b"]


def test_table_pads_columns():
    lines = output.table(["A", "BB"], [["xxx", "y"], ["z", None]], indent=0)
    assert lines == ["A    BB", "xxx  y", "z    <none>"]


# ---------------------------------------------------------------------------------------------
# The escaped class, checked against Unicode's own data (the `regex` package's property tables)

import io
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

ALL_CODE_POINTS = "".join(chr(code) for code in range(0x110000))
# Graphic characters whose glyph is blank (not in any Unicode property that says so).
BLANK_LOOKING = {0x2800, 0x16FE4, 0x1D159}


def _reference_escaped():
    """Every code point that must be escaped, from Unicode's data: Default_Ignorable_Code_Point, controls,
    format characters, surrogates, line/paragraph separators, spaces other than U+0020; plus BLANK_LOOKING."""
    regex = pytest.importorskip("regex")
    found = regex.findall(r"[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Zs}]", ALL_CODE_POINTS)
    return {ord(ch) for ch in found} - {0x20} | BLANK_LOOKING


def test_the_escaped_class_is_unicodes_not_a_hand_picked_list():
    reference = _reference_escaped()
    escaped = {code for code in range(0x110000) if output.safe(chr(code)) != chr(code)}
    assert sorted(reference - escaped) == [], "characters of the class that reach the terminal raw"
    assert sorted(escaped - reference) == [], "characters escaped outside the class"
    table = {code for first, last in output.ESCAPED_RANGES for code in range(first, last + 1)}
    assert table == reference


@pytest.mark.parametrize("code", [0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x180B, 0x180F, 0xFE00, 0xFE0F,
                                  0xE0100, 0xE01EF, 0x206A, 0x206F, 0x2800, 0x00A0, 0x3000, 0x17B4, 0x1BCA0])
def test_the_issues_examples_are_escaped(code):
    assert output.safe("a%sb" % chr(code)) == "a%sb" % ("\\x%02x" % code if code < 0x100 else
                                                         "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code)


any_text = st.text(st.characters(exclude_categories=()), max_size=40)


@settings(max_examples=300)
@given(any_text, st.sampled_from([None, "utf-8", "iso8859-1", "ascii", "cp1252"]))
def test_escaping_is_idempotent_and_shows_only_what_the_encoding_can(text, encoding):
    once = output.shown(text, encoding)
    assert output.shown(once, encoding) == once
    assert output.safe(output.safe(text)) == output.safe(text)
    assert output.shown(output.safe(text), encoding) == output.shown(text, encoding) or text == ""
    once.encode(encoding or "utf-8")  # never raises
    assert not {ch for ch in once if output.safe(ch) != ch}


def _stream(encoding):
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict", newline="\n")


def _written(stream):
    stream.flush()
    return stream.buffer.getvalue()


def test_the_writer_escapes_every_line_it_is_given():
    stream = io.StringIO()
    output.write_lines(["raw \x1b[2J\u202e", "two\nlines\r", "", "<none>"], stream=stream)
    assert stream.getvalue() == "raw \\x1b[2J\\u202e\ntwo\\x0alines\\x0d\n\n<none>\n"


def test_what_a_latin1_terminal_cannot_show_is_escaped_not_a_failed_write(monkeypatch):
    stdout, stderr = _stream("iso8859-1"), _stream("iso8859-1")
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    output.say("Message: rollout done \u2713 f\u00fcr J\u00fcrgen")
    output.write_lines(output.fields([("Name", "\u2713"), ("Phase", "ok")]))
    output.warning("check \u2713\x1b")
    output.error("bad \u2713\n")
    assert _written(stdout) == (b"Message: rollout done \\u2713 f\xfcr J\xfcrgen\n"
                                b"Name:   \\u2713\nPhase:  ok\n")
    assert _written(stderr) == b"warning: check \\u2713\\x1b\nerror: bad \\u2713\\x0a\n"


def test_table_columns_align_as_the_terminal_shows_them(monkeypatch):
    monkeypatch.setattr(sys, "stdout", _stream("ascii"))
    lines = output.table(["A", "B"], [["\u2713", "x"], ["abcdefgh", "y"]], indent=0)
    assert lines == ["A         B", "\\u2713    x", "abcdefgh  y"]
    assert len({line.index(ch) for line, ch in zip(lines, "Bxy")}) == 1


@pytest.mark.parametrize("encoding", ["utf-8", "iso8859-1", "ascii"])
def test_shell_lines_paste_the_same_bytes_in_any_locale(monkeypatch, tmp_path, encoding):
    words = ["printf", "%s\\0", "plain", "", "a b'c", "f\u00fcr", "\u2713 ok \u2713\u2713", "$(touch PWNED)", "\u6771"]
    stdout = _stream(encoding)
    monkeypatch.setattr(sys, "stdout", stdout)
    line = output.shell_line(words)
    output.say(line)
    printed = _written(stdout).decode(encoding)
    assert printed == line + "\n" and "\\u" not in printed
    ran = subprocess.run(["sh", "-c", printed], cwd=tmp_path, stdout=subprocess.PIPE, check=True).stdout
    assert ran.split(b"\0")[:-1] == [os.fsencode(w) for w in words[2:]]
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("word", ["tab\there", "esc\x1b", "nbsp\u00a0", "zw\u200b", "\udcff"])
def test_shell_lines_refuse_what_cannot_be_shown(word):
    with pytest.raises(ValueError):
        output.shell_line(["echo", word])


def _writes_prerendered_help(path, number):
    """main._write_help writes the help the build pre-rendered from the plugin's own text (no cluster text), so
    that --help needs neither argparse nor the writer's escaping: the one exception."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("def _write_help(")), None)
    if start is None or number - 1 < start:
        return False
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("def ")), len(lines))
    return number - 1 < end


def test_only_the_writer_writes_to_the_terminal():
    """Every string that reaches stdout or stderr goes through the writer's escape: no other module writes
    there (``__main__`` and ``start`` print only their own fixed lines, or reconfigure the streams, before the
    rest of the package is imported)."""
    import re
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kubectl_aicr")
    writes = re.compile(r"\bprint\(|sys\.(stdout|stderr|__stdout__|__stderr__)\b|\bos\.write\(\s*[12]\b")
    offenders = []
    for folder, _, files in os.walk(package):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith(".py") or os.path.relpath(path, package) in ("output.py", "__main__.py", "start.py"):
                continue
            with open(path, encoding="utf-8") as handle:
                offenders += ["%s:%d" % (os.path.relpath(path, package), number)
                              for number, line in enumerate(handle, 1)
                              if writes.search(line.split("#")[0]) and ".fileno()" not in line
                              and not _writes_prerendered_help(path, number)]
    assert offenders == []  # (main points a closed stdout at /dev/null with dup2 and fileno(), writing nothing)
