"""Text output: aligned ``Label:  value`` sections and tables, with untrusted text made safe.

Everything the cluster sends is untrusted. :func:`safe` makes terminal control
characters visible instead of letting them act: C0 controls (including ESC, CR,
backspace, newline in a one-line field), DEL, C1 controls, the Unicode bidi
overrides and isolates (the "Trojan Source" set, CVE-2021-42574), and the line
and paragraph separators become ``\\xNN`` or ``\\uNNNN`` escapes. This module is the only
one that writes to the terminal (stdout for results, stderr for ``error:`` lines).

The layout follows kubectl's describe printers (k8s.io/kubectl ``pkg/describe``):
sections in the order a reader decides in, values aligned per section,
``<none>`` for an empty value.
"""

import re
import sys

from .errors import AicrError

NONE = "<none>"

# C0, DEL, C1; bidi marks, overrides and isolates; line/paragraph separators; invisible characters that make
# two names look alike (soft hyphen, zero-width, word joiner, BOM, tag characters); lone surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e"
                     "\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff\U000e0000-\U000e007f]")


def _escape(match):
    code = ord(match.group())
    if code < 0x100:
        return "\\x%02x" % code
    return "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def safe(value):
    """``value`` as one line of text with every control, bidi and line-separator character escaped.

    ``None`` and ``""`` become ``<none>``; non-strings are shown with ``str()``.
    """
    if value is None or value == "":
        return NONE
    text = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape, text)


def fields(pairs, indent=0):
    """Lines ``Label:  value`` for ``pairs`` [(label, value)], values aligned one column past the longest label.

    A value that is a list of strings continues on following lines at the value column.
    """
    width = max((len(label) for label, _ in pairs), default=0) + 3
    lines = []
    for label, value in pairs:
        values = value if isinstance(value, list) else [value]
        head = " " * indent + (label + ":").ljust(width)
        lines.append((head + safe(values[0] if values else None)).rstrip())
        for more in values[1:]:
            lines.append(" " * (indent + width) + safe(more))
    return lines


def table(headers, rows, indent=2):
    """Lines of a table: ``headers`` (upper-case titles) and ``rows`` of values, columns padded by two spaces."""
    cells = [[safe(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = []
    for row in [list(headers)] + cells:
        text = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        lines.append(" " * indent + text)
    return lines


def write_lines(lines, stream=None):
    """Write ``lines`` (already safe text) to stdout, one per line.

    A closed pipe (``| head``) raises BrokenPipeError, which ``main`` ends quietly; any other
    failure to write (a full disk, a closed stdout) raises AicrError: the result was not delivered.
    """
    stream = stream or sys.stdout
    if stream is None:
        raise AicrError("cannot write the output: standard output is closed")
    try:
        stream.write("".join(line + "\n" for line in lines))
        stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise AicrError("cannot write the output: %s" % (getattr(exc, "strerror", None) or exc)) from None


def say(text):
    """Write one line of already-composed text to stdout; untrusted parts must have gone through :func:`safe`."""
    write_lines([text])


def inform(lines):
    """Write ``lines`` (already safe text) to stderr: what a decision rests on, shown before it is written.

    Raises AicrError when they cannot be shown (stderr closed or failing): nothing is decided unseen.
    """
    try:
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError) as exc:
        raise AicrError("cannot show what the decision rests on (standard error: %s); nothing was written"
                        % (getattr(exc, "strerror", None) or "closed")) from None


def warning(message):
    """Write ``warning: <message>`` to stderr, with the message made safe."""
    sys.stderr.write("warning: %s\n" % safe(message))
    sys.stderr.flush()


def error(message):
    """Write ``error: <message>`` to stderr, with the message made safe."""
    sys.stderr.write("error: %s\n" % safe(message))
    sys.stderr.flush()
