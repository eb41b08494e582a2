"""API server warnings: the ``Warning`` response headers, as client-go reads them and kubectl shows them.

The API server attaches ``Warning: 299 - "<text>"`` headers (RFC 7234 section 5.5) to an answer: a
deprecated API version, a ValidatingAdmissionPolicy with the Warn action, unknown fields. client-go parses
every answer's headers (k8s.io/apimachinery ``pkg/util/net/http.go`` ``ParseWarningHeader``; k8s.io/client-go
``rest/warnings.go`` ``handleWarnings``) and hands each to the default handler, which kubectl sets to a
``WarningWriter`` with ``Deduplicate: true`` (k8s.io/kubectl ``pkg/cmd/cmd.go``): a warning with code 299
and a non-empty text is written to stderr as ``Warning: <text>``, each distinct text once per process.

:data:`handler` is that default handler: None (warnings dropped) until the entry point sets it to a
callable taking the text (main.py: output.server_warning). :func:`handle` is what the REST client calls with
an answer's ``Warning`` header value (its repeated headers joined with ``, ``, RFC 9110 section 5.3).
"""

import re

#: The process's default warning handler: a callable(text), or None (client-go ``SetDefaultWarningHandler``).
handler = None
_seen = set()
_CODE = re.compile(r"^[1-9][0-9]{2}$")


def _has_control(text):
    return any(ch < " " or "\x7f" <= ch <= "\x9f" for ch in text)


def _quoted(text):
    """``(string, remainder)`` of an RFC 7230 quoted-string at the start of ``text``, or None (Go's
    ``parseQuotedString``: a backslash takes the next byte as it is)."""
    if not text.startswith('"'):
        return None
    out, escaping = [], False
    for i in range(1, len(text)):
        ch = text[i]
        if ch == '"' and not escaping:
            return "".join(out), text[i + 1:].strip()
        if ch == "\\" and not escaping:
            escaping = True
            continue
        out.append(ch)
        escaping = False
    return None


def parse_one(header):
    """``((code, agent, text), remainder)`` for the first warning of ``header``, or None where Go's
    ``ParseWarningHeader`` returns an error (its remainder is then dropped, as ``ParseWarningHeaders`` does)."""
    parts = header.strip().split(" ", 2)
    if len(parts) != 3 or not _CODE.match(parts[0]) or not parts[1] or _has_control(parts[1]) or not parts[2]:
        return None
    quoted = _quoted(parts[2])
    if quoted is None or _has_control(quoted[0]):
        return None
    text, rest = quoted
    if rest.startswith('"'):  # a warn-date
        end = rest.find('"', 1)
        if end < 0:
            return None
        rest = rest[end + 1:].strip()
    if rest:
        if not rest.startswith(","):
            return None
        rest = rest[1:].strip()
    return (int(parts[0]), parts[1], text), rest


def parse(header):
    """Every well-formed warning of one ``Warning`` header value, in order: [(code, agent, text)]."""
    found = []
    while header:
        one = parse_one(header)
        if one is None:
            break
        found.append(one[0])
        header = one[1]
    return found


def handle(header):
    """Hand each new 299 warning of ``header`` (a str, or None when absent) to :data:`handler`, once each."""
    if not header or handler is None:
        return
    for code, _agent, text in parse(header):
        if code == 299 and text and text not in _seen:
            _seen.add(text)
            handler(text)
