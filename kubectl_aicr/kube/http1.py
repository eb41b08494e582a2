"""HTTP/1.1 on one connected socket: write a request, read its response (RFC 9112), nothing else.

Why not ``http.client``: it imports the ``email`` package to parse headers, which costs every start of the
plugin about 9 ms (issue 15: measured on CPython 3.11), and the plugin needs only this small part of it.

- A request is written in one ``sendall``: the request line, the headers in the order given (a name may
  repeat: ``Impersonate-Group``), ``Content-Length`` when there is a body, then the body. Header values
  are sent as UTF-8 (what Go sends for non-ASCII values), a lone surrogate as U+FFFD (Go strings hold
  none); a value holding CR, LF or NUL is refused (:class:`ProtocolError`), never sent.
- A response (RFC 9112 section 4 to 7): the status line ``HTTP/1.x NNN reason`` (1xx answers but
  101 are read and skipped, as Go's net/http skips them), header fields up to :data:`MAX_HEADER_BYTES` in
  all and :data:`MAX_HEADERS` fields (an obsolete line folding is joined with a space), then the body
  framed by section 6.3: none for 1xx, 204 and 304 (and a HEAD); ``Transfer-Encoding: chunked`` (chunk
  extensions and trailer fields read and dropped; any other transfer coding is refused, as Go's
  net/http refuses it: the request asked for none); else ``Content-Length`` (several
  different values, or one that is not a number, are refused); else the body runs to the connection's
  close. At most ``limit`` body bytes are read: a longer body raises :class:`BodyTooLarge`.
- The connection can carry the next request (``keep_alive``) unless the server said ``Connection:
  close``, spoke HTTP/1.0 without ``keep-alive``, or the body ran to the close.
- Timeouts are the socket's (the caller sets them) and the caller's watchdog; this module only reads.

Errors: :class:`ProtocolError` (a malformed answer), :class:`IncompleteResponse` (the connection closed
inside a response), :class:`ConnectionClosed` (closed before one: a ConnectionResetError),
:class:`BodyTooLarge`; ``OSError`` (and ``ssl.SSLError``) from the socket pass through.
"""

HTTP_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")
MAX_LINE_BYTES = 64 * 1024      # a status line, header line or chunk-size line (http.client's _MAXLINE)
MAX_HEADERS = 100               # header fields of one response (http.client's _MAXHEADERS)
MAX_HEADER_BYTES = 1024 * 1024  # the whole header section (Go's http.DefaultMaxHeaderBytes)
MAX_INTERIM_RESPONSES = 5       # 1xx answers skipped before the final one (Go's net/http skips up to 5)
MAX_CHUNK_LINE_BYTES = 4096    # a chunk-size line with its extensions (Go's net/http/internal maxLineLength)
READ_BYTES = 64 * 1024
_CONTROLS = frozenset(chr(c) for c in range(32) if c != 9) | {"\x7f"}  # what Go's ValidHeaderFieldValue refuses
_HEX = frozenset(b"0123456789abcdefABCDEF")


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as RFC 9112 writes it (the text says what)."""


class IncompleteResponse(ProtocolError):
    """The connection ended before the response was whole."""


class ConnectionClosed(ConnectionResetError):
    """The connection closed where a response should start (a ConnectionResetError, as http.client's
    RemoteDisconnected is: a reused connection the server had closed looks the same)."""


class BodyTooLarge(ProtocolError):
    """The body is longer than the limit given to :func:`read_response`."""


class Response:
    """A response: ``status`` (int), ``reason`` (str), ``headers`` ({lower-case name: value}; a repeated
    name keeps its values joined with ``, ``, RFC 9110 section 5.3), ``body`` (bytes), ``keep_alive``."""

    __slots__ = ("status", "reason", "headers", "body", "keep_alive")

    def __init__(self, status, reason, headers, body, keep_alive):
        self.status, self.reason, self.headers, self.body, self.keep_alive = status, reason, headers, body, keep_alive

    def header(self, name, default=None):
        """The value of header ``name`` (any case), or ``default``."""
        return self.headers.get(name.lower(), default)


def request_bytes(method, target, headers, body=None):
    """The bytes of one request: ``method`` and ``target`` (str, ASCII), ``headers`` [(name, value)] in order,
    ``body`` bytes or None. ProtocolError for a header value that would break the request's framing."""
    lines = ["%s %s HTTP/1.1" % (method, target)]
    for name, value in headers:
        if _CONTROLS.intersection(value) or _CONTROLS.intersection(name) or "\t" in name or ":" in name:
            raise ProtocolError("header %s cannot be sent: it holds a control character (a line break?)" % name)
        lines.append("%s: %s" % (name, value))
    if body is not None:
        lines.append("Content-Length: %d" % len(body))
    text = "\r\n".join(lines) + "\r\n\r\n"
    try:
        head = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (U+D800 to U+DFFF): U+FFFD, as Go strings hold none
        head = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")
    return head + (body or b"")


def read_response(reader, limit, method="GET"):
    """Read one response from ``reader`` (the socket's ``makefile("rb")``); return a :class:`Response` whose
    body is at most ``limit`` bytes. Raises ProtocolError, IncompleteResponse, BodyTooLarge, OSError."""
    for _ in range(MAX_INTERIM_RESPONSES + 1):
        version, status, reason = _status_line(reader)
        headers = _header_fields(reader)
        if not (100 <= status < 200) or status == 101:
            break
    else:
        raise ProtocolError("more than %d interim (1xx) responses" % MAX_INTERIM_RESPONSES)
    keep_alive = _keeps_alive(version, headers) and status != 101  # 101: the connection speaks another protocol
    if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        return Response(status, reason, headers, b"", keep_alive)
    coding = headers.get("transfer-encoding")
    if coding is not None:
        if coding.strip(" \t").lower() != "chunked":  # Go's net/http takes no other coding (transfer.go)
            raise ProtocolError("unsupported Transfer-Encoding %r" % coding[:60])
        return Response(status, reason, headers, _chunked_body(reader, limit), keep_alive)
    length = _content_length(headers.get("content-length"))
    if length is None:
        return Response(status, reason, headers, _body_to_close(reader, limit), False)
    if length > limit:
        raise BodyTooLarge("a response of %d bytes, over the %d-byte limit" % (length, limit))
    return Response(status, reason, headers, _exactly(reader, length), keep_alive)


def _line(reader, what):
    line = reader.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError("a %s longer than %d bytes" % (what, MAX_LINE_BYTES))
    return line


def _status_line(reader):
    line = _line(reader, "status line")
    if not line:
        raise ConnectionClosed("the server closed the connection without a response")
    parts = line.rstrip(b"\r\n").split(b" ", 2)
    if len(parts) < 2 or parts[0] not in HTTP_VERSIONS or len(parts[1]) != 3 or not parts[1].isdigit():
        raise ProtocolError("not an HTTP/1.1 status line: %r" % line[:60])
    reason = parts[2].decode("latin-1") if len(parts) == 3 else ""
    return parts[0], int(parts[1]), reason


def _header_fields(reader):
    fields, total, last = [], 0, None  # [(lower-case name, [value pieces])]
    while True:
        line = _line(reader, "header line")
        total += len(line)
        if total > MAX_HEADER_BYTES:
            raise ProtocolError("a header section over %d bytes" % MAX_HEADER_BYTES)
        if not line:
            raise IncompleteResponse("the connection closed inside the response's headers")
        if line in (b"\r\n", b"\n"):
            break
        text = line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
        text = text.decode("latin-1")
        if "\r" in text or "\x00" in text:
            raise ProtocolError("a header line holding CR or NUL: %r" % text[:60])
        if text[:1] in (" ", "\t") and last is not None:  # obs-fold (RFC 9112 section 5.2): one space
            last.append(text.strip(" \t"))
            continue
        name, colon, value = text.partition(":")
        if not colon or not name or name != name.strip(" \t"):
            raise ProtocolError("a malformed header line: %r" % text[:60])
        if len(fields) == MAX_HEADERS:
            raise ProtocolError("more than %d header fields" % MAX_HEADERS)
        last = [value.strip(" \t")]
        fields.append((name.lower(), last))
    headers = {}
    for name, pieces in fields:
        value = " ".join(piece for piece in pieces if piece)
        headers[name] = headers[name] + ", " + value if name in headers else value
    return headers


def _keeps_alive(version, headers):
    tokens = [t.strip().lower() for t in headers.get("connection", "").split(",")]
    if "close" in tokens:
        return False
    return version == b"HTTP/1.1" or "keep-alive" in tokens


def _content_length(value):
    """RFC 9110 section 8.6: one non-negative decimal number (a list of identical ones is that number)."""
    if value is None:
        return None
    values = {v.strip(" \t") for v in value.split(",")}
    if len(values) != 1:
        raise ProtocolError("different Content-Length values: %r" % value[:60])
    number = values.pop()
    if not number.isdigit() or not number.isascii() or len(number) > 18:
        raise ProtocolError("an invalid Content-Length: %r" % value[:60])
    return int(number)


def _exactly(reader, length):
    data = reader.read(length)
    if len(data) < length:
        raise IncompleteResponse("the connection closed %d bytes into a %d-byte body" % (len(data), length))
    return data


def _body_to_close(reader, limit):
    chunks, total = [], 0
    while True:
        chunk = reader.read1(READ_BYTES) if hasattr(reader, "read1") else reader.read(READ_BYTES)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge("a response over the %d-byte limit" % limit)
        chunks.append(chunk)


def _chunked_body(reader, limit):
    """RFC 9112 section 7.1: chunk-size [; extensions] CRLF, data CRLF, ..., 0 CRLF, trailer fields, CRLF."""
    chunks, total = [], 0
    while True:
        line = reader.readline(MAX_CHUNK_LINE_BYTES + 1)
        if len(line) > MAX_CHUNK_LINE_BYTES:
            raise ProtocolError("a chunk-size line longer than %d bytes" % MAX_CHUNK_LINE_BYTES)
        if not line.endswith(b"\n"):
            raise IncompleteResponse("the connection closed inside a chunked body")
        size_text = line.split(b";", 1)[0].strip(b" \t\r\n")
        if not size_text or len(size_text) > 16 or not _HEX.issuperset(size_text):
            raise ProtocolError("a malformed chunk size: %r" % line[:60])
        size = int(size_text, 16)
        if size == 0:
            _header_fields(reader)  # the trailer section: read, not used
            return b"".join(chunks)
        total += size
        if total > limit:
            raise BodyTooLarge("a response over the %d-byte limit" % limit)
        chunks.append(_exactly(reader, size))
        end = reader.readline(3)
        if len(end) < 2 and not end.endswith(b"\n"):
            raise IncompleteResponse("the connection closed inside a chunked body")
        if end not in (b"\r\n", b"\n"):
            raise ProtocolError("a chunk not followed by CRLF")
