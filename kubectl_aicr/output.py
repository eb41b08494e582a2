"""Text output: aligned ``Label:  value`` sections and tables, with untrusted text made safe.

Everything the cluster sends is untrusted. This module is the only one that writes to the terminal
(stdout for results, stderr for ``warning:`` and ``error:`` lines), and it escapes every line it
writes, whoever composed it, so no command can forget: a character in :data:`ESCAPED_RANGES`
(controls, bidi, separators, invisible and blank-looking characters, surrogates) becomes ``\\xNN``,
``\\uNNNN`` or ``\\UNNNNNNNN``, and so does any character the stream's encoding cannot show (a
``de_DE.ISO-8859-1`` terminal gets ``\\u2713`` for a check mark instead of a failed write). One
character in cluster text never hides a rollout. Escaping is idempotent: escaped text has only
printable ASCII in place of what it replaced, so text that went through :func:`safe` is unchanged
by the writer.

The layout follows kubectl's describe printers (k8s.io/kubectl ``pkg/describe``):
sections in the order a reader decides in, values aligned per section,
``<none>`` for an empty value. :func:`fields` and :func:`table` give lines in their shown
(escaped) form, so columns align as the terminal shows them.
"""

import codecs
import os
import re
import sys

from .errors import AicrError

NONE = "<none>"

# Code points shown as escapes, as (first, last) ranges. The class: every Default_Ignorable_Code_Point
# (Unicode DerivedCoreProperties.txt, DI), every control (Cc), format character (Cf), surrogate (Cs),
# line and paragraph separator (Zl, Zp) and space other than U+0020 (Zs: look-alike spacing), plus
# characters whose glyph is blank (U+2800, U+16FE4, U+1D159). The runtime's unicodedata differs with the
# Python version (and has no Default_Ignorable_Code_Point), so the table is written out;
# tests/test_output.py checks it, code point by code point, against the `regex` package's Unicode data.
ESCAPED_RANGES = (
    (0x0000, 0x001F),  # C0 controls (Cc): ESC, CR, backspace, tab, newline, ...
    (0x007F, 0x00A0),  # DEL and C1 controls (Cc); no-break space (Zs)
    (0x00AD, 0x00AD),  # soft hyphen (Cf, DI)
    (0x034F, 0x034F),  # combining grapheme joiner (DI)
    (0x0600, 0x0605),  # Arabic number signs (Cf)
    (0x061C, 0x061C),  # Arabic letter mark (Cf, DI)
    (0x06DD, 0x06DD),  # Arabic end of ayah (Cf)
    (0x070F, 0x070F),  # Syriac abbreviation mark (Cf)
    (0x0890, 0x0891),  # Arabic pound and piastre marks above (Cf)
    (0x08E2, 0x08E2),  # Arabic disputed end of ayah (Cf)
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers (DI)
    (0x1680, 0x1680),  # Ogham space mark (Zs)
    (0x17B4, 0x17B5),  # Khmer inherent vowels (DI)
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator (Cf, DI)
    (0x2000, 0x200F),  # en quad .. hair space (Zs); zero-width space and joiners, LRM, RLM (Cf, DI)
    (0x2028, 0x202F),  # line and paragraph separators (Zl, Zp); bidi embeddings, overrides (Cf); narrow NBSP
    (0x205F, 0x206F),  # medium math space (Zs); word joiner, invisible operators, bidi isolates (Cf, DI)
    (0x2800, 0x2800),  # braille pattern blank (blank glyph)
    (0x3000, 0x3000),  # ideographic space (Zs)
    (0x3164, 0x3164),  # Hangul filler (DI)
    (0xD800, 0xDFFF),  # surrogates (Cs): never text on their own (undecodable bytes of a file name)
    (0xFE00, 0xFE0F),  # variation selectors (DI)
    (0xFEFF, 0xFEFF),  # zero-width no-break space, byte order mark (Cf, DI)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler (DI)
    (0xFFF0, 0xFFFB),  # reserved (DI); interlinear annotation controls (Cf)
    (0x110BD, 0x110BD),  # Kaithi number sign (Cf)
    (0x110CD, 0x110CD),  # Kaithi number sign above (Cf)
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls (Cf)
    (0x16FE4, 0x16FE4),  # Khitan small script filler (blank glyph)
    (0x1BCA0, 0x1BCA3),  # shorthand format controls (Cf, DI)
    (0x1D159, 0x1D159),  # musical symbol null notehead (blank glyph)
    (0x1D173, 0x1D17A),  # musical symbol format controls (Cf, DI)
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement, reserved (Cf, DI)
)

_UNSAFE = []  # the compiled class of ESCAPED_RANGES, made by the first line that is not printable ASCII


def _unsafe():
    if not _UNSAFE:
        _UNSAFE.append(re.compile("[%s]" % "".join(
            "%s-%s" % (re.escape(chr(first)), re.escape(chr(last))) for first, last in ESCAPED_RANGES)))
    return _UNSAFE[0]


def _escape_code(code):
    if code < 0x100:
        return "\\x%02x" % code
    return "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def _escape(match):
    return _escape_code(ord(match.group()))


def _encoding(stream):
    """The codec name of ``stream``'s encoding (``utf-8``, ``iso8859-1``, ...); None when it takes any str."""
    name = getattr(stream, "encoding", None)
    if not isinstance(name, str):
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "ascii"


def _showable(ch, encoding):
    try:
        ch.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def shown(text, encoding=None):
    """``text`` (str) as it reaches a terminal: every character in :data:`ESCAPED_RANGES`, and every one
    ``encoding`` (a codec name, or None for any) cannot encode, as ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN``."""
    if text.isascii() and text.isprintable():  # U+0020 to U+007E: nothing to escape, in any encoding
        return text
    text = _unsafe().sub(_escape, text)
    if encoding is None or encoding == "utf-8":
        return text
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return "".join(ch if _showable(ch, encoding) else _escape_code(ord(ch)) for ch in text)
    return text


def cluster_text(text):
    """``text`` (a str read from the cluster) as every view shows it (describe, list, the write commands'
    "on what was read" block, their result lines and messages): the one rule that keeps two different values
    from looking alike.

    - ``""`` is ``<none>``, kubectl's word for an empty value (never nothing at all);
    - text that could be mistaken for another value is quoted as Go's ``%q`` (kubectl's messages) quotes it,
      in double quotes with ``\\`` and ``"`` escaped by a backslash: text with leading or trailing
      whitespace (``"alice "``, which would look like ``alice``), text that begins with ``"`` (it would look
      quoted), text holding a backslash (it could look like an escape the writer makes, ``\\x1b``), and
      text in angle brackets (``"<none>"``: it would look like one of the plugin's own words, ``<none>``,
      ``<invalid ...>``);
    - any other text is shown as it is.

    Not escaped: the writer escapes control, bidi and invisible characters in every line, quoted or not.
    """
    if text == "":
        return NONE
    if text != text.strip() or text.startswith('"') or "\\" in text or (text.startswith("<") and text.endswith(">")):
        return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')
    return text


class ClusterText(str):
    """A str read from the cluster (every string field :mod:`kubectl_aicr.aicr.objects` reads): it compares,
    hashes, slices, encodes, JSON-encodes and is sent as the text itself, but ``str()``, ``"%s"`` and
    ``format()`` give it as every view shows it (:func:`cluster_text`), so no message or line can show an
    empty or look-alike value unmarked. ``text.raw`` is the text itself as an exact str.
    """

    __slots__ = ()

    def __str__(self):
        return cluster_text(str.__str__(self))

    def __format__(self, spec):
        return format(str(self), spec)

    @property
    def raw(self):
        return str.__str__(self)


def or_none(value):
    """``value`` as text for a line: ``<none>`` (kubectl's word for an empty value) for ``None`` and ``""``,
    ``str()`` of anything else (a :class:`ClusterText` as :func:`cluster_text` shows it). Not escaped: the
    writer escapes every line."""
    if value is None or value == "":
        return NONE
    return str(value)


def printable(text):
    """True when ``text`` (str) has no character :func:`shown` escapes: it reaches a terminal as it is."""
    return shown(text) == text


def safe(value):
    """``value`` as one line of text with every control, bidi, separator and invisible character escaped.

    ``None`` and ``""`` become ``<none>`` (:func:`or_none`); non-strings are shown with ``str()``. Idempotent.
    Commands need not call it: :func:`write_lines`, :func:`inform` and the ``warning``/``error`` lines
    escape every line they write.
    """
    return shown(or_none(value))


def _cell(value):
    """A field value or table cell as stdout shows it (so its length is its width there)."""
    return shown(safe(value), _encoding(sys.stdout))


def fields(pairs, indent=0):
    """Lines ``Label:  value`` for ``pairs`` [(label, value)], values aligned one column past the longest label.

    A value that is a list of strings continues on following lines at the value column.
    """
    width = max((len(label) for label, _ in pairs), default=0) + 3
    lines = []
    for label, value in pairs:
        values = value if isinstance(value, list) else [value]
        head = " " * indent + (label + ":").ljust(width)
        lines.append((head + _cell(values[0] if values else None)).rstrip())
        for more in values[1:]:
            lines.append(" " * (indent + width) + _cell(more))
    return lines


def table(headers, rows, indent=2):
    """Lines of a table: ``headers`` (upper-case titles) and ``rows`` of values, columns padded by two spaces."""
    cells = [[_cell(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = []
    for row in [list(headers)] + cells:
        text = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        lines.append(" " * indent + text)
    return lines


def shell_line(words):
    """One sh command line (str) that runs the argv ``words`` exactly when pasted, made only of what
    stdout shows as it is: each word quoted with ``shlex.quote``; a run of characters stdout's encoding
    cannot show is spliced in as ``"$(printf '\\ooo...')"``, the octal of its bytes (``os.fsencode``,
    else UTF-8), so the pasted argument has the same bytes.

    ValueError for a character :func:`safe` escapes (controls, invisible): callers refuse those first.
    """
    encoding = _encoding(sys.stdout)
    return " ".join(_shell_word(word, encoding) for word in words)


def _shell_word(word, encoding):
    import shlex  # only shell lines need it (reproduce's commands, describe's decision line)
    if shown(word) != word:
        raise ValueError("a word with characters that cannot be shown as they are")
    if shown(word, encoding) == word:
        return shlex.quote(word)
    parts, plain = [], ""
    for ch in word:
        if _showable(ch, encoding) if encoding else True:
            plain += ch
            continue
        if plain:
            parts.append(shlex.quote(plain))
            plain = ""
        if parts and parts[-1].startswith('"$(printf'):
            parts[-1] = parts[-1][:-3] + _octal(ch) + "')\""
        else:
            parts.append("\"$(printf '%s')\"" % _octal(ch))
    if plain:
        parts.append(shlex.quote(plain))
    return "".join(parts)


def _octal(ch):
    try:
        data = os.fsencode(ch)
    except UnicodeEncodeError:
        data = ch.encode("utf-8")
    return "".join("\\%03o" % byte for byte in data)


def write_lines(lines, stream=None):
    """Write ``lines`` (str each) to stdout (or ``stream``), one per line, each escaped for the stream
    (:func:`shown`): a newline inside a line is shown as ``\\x0a``, never breaks the layout.

    A closed pipe (``| head``) raises BrokenPipeError, which ``main`` ends quietly; any other
    failure to write (a full disk, a closed stdout) raises AicrError: the result was not delivered.
    """
    stream = stream or sys.stdout
    if stream is None:
        raise AicrError("cannot write the output: standard output is closed")
    encoding = _encoding(stream)
    try:
        stream.write("".join(shown(line, encoding) + "\n" for line in lines))
        stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise AicrError("cannot write the output: %s" % (getattr(exc, "strerror", None) or exc)) from None


def say(text):
    """Write one line to stdout, escaped by the writer like every line."""
    write_lines([text])


def inform(lines):
    """Write ``lines`` to stderr, each escaped by the writer: what a decision rests on, shown before it is
    written.

    Raises AicrError when they cannot be shown (stderr closed or failing): nothing is decided unseen.
    """
    try:
        if sys.stderr is None:
            raise ValueError("closed")
        encoding = _encoding(sys.stderr)
        sys.stderr.write("".join(shown(line, encoding) + "\n" for line in lines))
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError) as exc:
        raise AicrError("cannot show what the decision rests on (standard error: %s); nothing was written"
                        % (getattr(exc, "strerror", None) or "closed")) from None


def _to_stderr(line):
    stream = sys.stderr
    if stream is None:
        return
    stream.write(shown(line, _encoding(stream)) + "\n")
    stream.flush()


def warning(message):
    """Write ``warning: <message>`` to stderr, escaped (one line whatever the message holds)."""
    _to_stderr("warning: %s" % safe(message))


def server_warning(text):
    """Write an API server's warning as kubectl does, ``Warning: <text>`` on stderr (client-go ``WarningWriter``),
    escaped like all cluster text (kube/warning_headers.py calls it once per distinct text)."""
    _to_stderr("Warning: %s" % safe(text))


def error(message):
    """Write ``error: <message>`` to stderr, escaped (one line whatever the message holds)."""
    _to_stderr("error: %s" % safe(message))


def hint(line):
    """Write one more line of an error (``did you mean --context?``) to stderr, escaped."""
    _to_stderr(line)


def flush_stdout():
    """Flush stdout at the end of a command; when that fails (a closed or full stdout), point it at
    /dev/null so the interpreter's own flush at exit prints no ``Exception ignored`` text."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        silence_stdout()


def silence_stdout():
    """After a closed pipe (``| head``), point stdout at /dev/null so the interpreter's flush at exit is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
