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


def test_fields_align_values():
    lines = output.fields([("Name", "a"), ("Starting inventory", "b")])
    assert lines == ["Name:                a", "Starting inventory:  b"]


def test_table_pads_columns():
    lines = output.table(["A", "BB"], [["xxx", "y"], ["z", None]], indent=0)
    assert lines == ["A    BB", "xxx  y", "z    <none>"]
