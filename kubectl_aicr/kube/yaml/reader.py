"""A small YAML 1.2 (and JSON) reader for kubeconfig files; standard library only.

``load(text)`` reads one document, ``load_all(text)`` a stream of them, ``load_first(text)``
the first one only, into plain Python values: ``dict`` (insertion-ordered), ``list``,
``str``, ``int``, ``float``, ``bool``, ``None`` and ``bytes`` (for ``!!binary``). Every
refusal is a ``YAMLError`` carrying the 1-based line and column of the problem; no other
exception escapes for any text input.

Each takes a ``schema``: ``CORE`` (the default) is YAML 1.2 as described below; ``GO_YAML``
reads as kubectl reads kubeconfig and exec plugin output (go-yaml v2's YAML 1.1 scalars,
tags and merge keys, then JSON's rules; see :class:`_Parser`). The syntax is the same.

The parser is a recursive descent over the text: each method consumes one piece of input
(a node, a scalar, a line break) and returns the position after it, following the
productions of the YAML 1.2.2 specification (https://yaml.org/spec/1.2.2/). Section
numbers below refer to that document.

Supported:

- Streams (9.2): ``%YAML 1.x`` and ``%TAG`` directives, ``---`` and ``...`` markers, bare,
  explicit and empty documents, comments (6.6), a leading byte order mark (5.2),
  LF, CRLF and lone CR line breaks (5.4).
- Block collections (8.2): mappings with implicit (``key: value``) and explicit
  (``? key`` / ``: value``) entries, sequences indented under their key or not
  (``key:`` then ``- a`` at the key's column), compact nested collections (``- - a``,
  ``- a: b``), node properties on their own line above a collection.
- Block scalars (8.1): literal ``|`` and folded ``>``, chomping ``-``/``+``, explicit
  indentation indicators; the content indentation is the parent's indentation plus the
  indicator. At the top level the indicator counts from column 0, as libyaml, PyYAML and
  go-yaml read it and PyYAML writes it (the 1.2.2 grammar would count from -1).
- Flow nodes (7): ``[...]`` and ``{...}`` over several lines, single-pair mappings inside
  sequences (``[a: b]``), JSON-style adjacent values (``{"a":1}``), plain scalars over
  several lines with line folding (6.5, 7.3.3), single-quoted (``''``) and double-quoted
  scalars with every escape of 5.7 (UTF-16 surrogate pairs in ``\\u`` escapes are joined,
  as JSON does) and escaped line breaks. So every JSON text loads.
- Properties (6.9): anchors ``&a`` and aliases ``*a`` (an alias gives the very same Python
  object as its anchor); tags ``!!str !!int !!bool !!null !!float !!map !!seq !!binary``
  (base64, whitespace allowed), their ``tag:yaml.org,2002:`` verbatim forms, handles
  declared by ``%TAG``, and the non-specific ``!`` (the node is a string).
- Scalar resolution by the core schema (10.3.2): ``~``/``null``/``Null``/``NULL``/empty
  are None; ``true``/``True``/``TRUE`` and the false forms are bools; decimal, ``0o``
  and ``0x`` integers; floats with ``.``/exponent and ``.inf``/``.nan`` forms; the rest
  (and every quoted or block scalar) is a string. A plain ``<<`` key is refused: merge
  keys belong to YAML 1.1 (kubectl's go-yaml applies them), so ignoring one would misread.

Refused (a ``YAMLError``), so that nothing is silently misread:

- tabs used as indentation (6.1), bad or inconsistent indentation, content after the
  end of a document's root node, ``key: value`` on the line of ``---``, ``- `` or
  ``key:`` where the grammar forbids it (8.2.2), comments not preceded by whitespace;
- duplicate keys (3.2.1.3; compared after resolution, reported at the second one, and
  also keys that differ in YAML but not as Python dict keys, such as ``1`` and ``true``),
  complex keys (a mapping or sequence as a key) and implicit keys over several lines;
- unknown tags (``!foo``, ``!!set``, ``!!omap``, ``!!timestamp``...), a tag that does not
  fit its node or value (``!!int abc``), undefined aliases or tag handles, an alias
  with properties, recursive aliases (the anchor is not defined until its node ends);
- unterminated quoted scalars and flow collections, invalid escapes, invalid block
  scalar headers, control characters, ``%YAML 2.x``, repeated directives;
- nesting deeper than ``MAX_DEPTH`` levels, and streams whose nodes, counting each alias
  as the whole node it repeats, exceed ``MAX_NODES`` (against "billion laughs").
"""

import math
import re

from .block import CORE, GO_YAML, resolve_go_yaml
from .schema import _GO_TAGS, _KNOWN_TAGS, _NO_PROPS, _UNKNOWN, _YAML_TAG, _construct, _go_construct, _go_key, _resolve
from ...errors import YAMLError

__all__ = ["load", "load_all", "load_first", "CORE", "GO_YAML", "MAX_DEPTH", "MAX_NODES"]

MAX_DEPTH = 100
MAX_NODES = 1000000

# Contexts of a block node (8.2): what may start on the indicator's line, and whether a
# sequence may sit at the parent's own column ("key:" then "- a").
_COMPACT, _SAME_SEQ = 1, 2
_DOC, _SEQ_ENTRY, _MAP_VALUE, _EXPLICIT = 0, _COMPACT, _SAME_SEQ, _COMPACT | _SAME_SEQ

_WS_EOL = " \t\n\x00"           # what must follow an indicator; "\x00" marks the end
_FLOW_END = " \t\n\x00,[]{}"
_INDICATORS = "-?:,[]{}#&*!|>'\"%@`"

_WS = re.compile(r"[ \t]*")
_SPACES = re.compile(r" *")
_SKIP = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*")   # blank and comment lines
_BAD_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_DQ_RUN = re.compile(r'[^"\\\n\x00]*')
_SQ_RUN = re.compile(r"[^'\n\x00]*")
_ANCHOR = re.compile(r"[^ \t\n\x00,\[\]{}]+")
_TAG = re.compile(r"!(?:<([^>\n\x00]*)>|(?:([0-9A-Za-z-]*)!)?"
                  r"((?:[0-9A-Za-z\-#;/?:@&=+$_.~*'()]|%[0-9A-Fa-f]{2})*))")
_HANDLE = re.compile(r"!(?:[0-9A-Za-z-]*!)?\Z")
_HEX = re.compile(r"[0-9A-Fa-f]+\Z")
# The rest of a plain scalar on one line (7.3.3): ": " and " #" end it, and so do the
# flow indicators inside a flow collection.
_PLAIN_BLOCK = re.compile(r"(?:[^ \t\n:#\x00]+|:(?=[^ \t\n\x00])|(?<![ \t\n])#"
                          r"|[ \t]+(?=[^ \t\n:#\x00]|:[^ \t\n\x00]))*")
_PLAIN_FLOW = re.compile(r"(?:[^ \t\n:#\x00,\[\]{}]+|:(?=[^ \t\n\x00,\[\]{}])|(?<![ \t\n])#"
                         r"|[ \t]+(?=[^ \t\n:#\x00,\[\]{}]|:[^ \t\n\x00,\[\]{}]))*")

_ESCAPES = {"0": "\x00", "a": "\x07", "b": "\x08", "t": "\t", "\t": "\t", "n": "\n",
            "v": "\x0b", "f": "\x0c", "r": "\r", "e": "\x1b", " ": " ", '"': '"',
            "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX_SIZE = {"x": 2, "u": 4, "U": 8}

def load(text, filename="<input>", schema=CORE):
    """Read a stream holding at most one document.

    ``text`` is a ``str`` (a leading BOM is ignored; a non-str is a TypeError, a
    programming error rather than bad input); ``filename`` only labels errors; ``schema``
    is ``CORE`` (YAML 1.2) or ``GO_YAML`` (kubectl's reading, see :class:`_Parser`). Returns
    the document's value (dict, list, str, int, float, bool, None or bytes, nested), or
    None for a stream without documents. Raises ``YAMLError(problem, filename, line,
    column)`` for any text it refuses, including a stream with a second document.
    """
    parser = _Parser(text, filename, schema)
    docs = parser.run()
    if len(docs) > 1:
        parser.fail("expected a single document, found a second one", parser.starts[1])
    return docs[0] if docs else None


def load_all(text, filename="<input>", schema=CORE):
    """Read every document of a stream: a list of values, one per document (maybe empty).

    Raises ``YAMLError`` as ``load`` does.
    """
    return _Parser(text, filename, schema).run()


def load_first(text, filename="<input>", schema=CORE):
    """The first document of a stream (None if it has none); the text after its end is not read.

    This is how go-yaml v2 ``Unmarshal`` reads a stream (client-go decodes an exec plugin's
    output so). Raises ``YAMLError`` as ``load`` does for the first document.
    """
    parser = _Parser(text, filename, schema)
    parser.first_only = True
    docs = parser.run()
    return docs[0] if docs else None


def _show(key):
    if isinstance(key, str):
        return repr(key if len(key) <= 60 else key[:57] + "...")
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    return repr(key)


class _Parser(object):
    """One pass over one stream; ``run()`` returns the list of documents.

    With ``schema`` GO_YAML it reads as kubectl does (sigs.k8s.io/yaml ``YAMLToJSON`` over
    go-yaml v2, then encoding/json): plain scalars by :func:`resolve_go_yaml`; tags
    ``!!str !!int !!bool !!null !!float !!binary !!timestamp`` checked as go-yaml checks them,
    ``!!binary`` giving a string; any other tag is ignored (a scalar is then a string);
    merge keys (``<<``, a mapping or a list of them) applied as go-yaml v2 applies them (in
    order, each write replacing the key's earlier value); keys made strings (``true``,
    ``1``, ``1.5``); a null key, and a NaN or infinite value (no JSON form), refused as
    kubectl refuses them. Duplicate keys stay refused (kubectl keeps the last one).
    """

    def __init__(self, text, filename, schema=CORE):
        if not isinstance(text, str):
            raise TypeError("yamlreader reads str, not %s" % type(text).__name__)
        if text.startswith("\ufeff"):
            text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text and text[-1] != "\n":
            text += "\n"   # the end of the input ends the last line too
        self.s = text + "\x00" * 4   # sentinels: control characters are refused below
        self.end = len(text)
        self.filename = filename
        self.depth = 0
        self.nodes = 0
        self.anchors = {}
        self.handles = {}
        self.starts = []
        if schema not in (CORE, GO_YAML):
            raise ValueError("unknown YAML schema %r" % (schema,))
        self.go = schema == GO_YAML
        self.first_only = False
        self.merge_at = -1     # GO_YAML: where the last merge key ("<<") was read
        self.nonfinite = []    # GO_YAML: (value, position) of every NaN or infinite float

    def fail(self, problem, pos):
        pos = max(0, min(pos, self.end))
        line = self.s.count("\n", 0, pos) + 1
        column = pos - self.s.rfind("\n", 0, pos)
        raise YAMLError(problem, self.filename, line, column)

    def run(self):
        bad = _BAD_CHAR.search(self.s, 0, self.end)
        if bad is not None:
            self.fail("invalid character U+%04X" % ord(bad.group()), bad.start())
        try:
            docs = self.stream()
            if self.nonfinite:
                self.check_finite(docs)
            return docs
        except RecursionError:
            self.fail("the document is nested too deeply", 0)
        except YAMLError:
            raise
        except Exception as exc:  # a bug of ours must still surface as a YAMLError
            self.fail("internal error of the YAML reader (%s)" % type(exc).__name__, 0)

    def check_finite(self, docs):
        """GO_YAML: refuse a NaN or infinite value (encoding/json cannot write one; kubectl refuses)."""
        found, stack = set(), list(docs)
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
                found.add(id(value))
        for value, pos in self.nonfinite:
            if id(value) in found:
                self.fail("%s has no JSON form (kubectl refuses it)"
                          % ("NaN" if math.isnan(value) else "an infinite number"), pos)

    # -- lines and positions ------------------------------------------------------------

    def col(self, p):
        return p - self.s.rfind("\n", 0, p) - 1

    def is_marker(self, p):
        """True if a '---' or '...' document marker starts at p (6.8, 9.1)."""
        s = self.s
        return ((p == 0 or s[p - 1] == "\n") and s.startswith(("---", "..."), p)
                and s[p + 3] in _WS_EOL)

    def skip(self, p):
        """From p (a line start, a line end or a comment) skip blank and comment lines.

        Returns the position of the next content character, or ``self.end``.
        """
        s = self.s
        if s[p] == "#":
            p = s.find("\n", p)
            if p < 0:
                return self.end
        if s[p] == "\n":
            p += 1
        return _SKIP.match(s, p).end()

    def check_tab(self, p, start=None):
        """Block structure is indented by spaces only (6.1): no tab before p on its line."""
        if start is None:
            start = self.s.rfind("\n", 0, p) + 1
        tab = self.s.find("\t", start, p)
        if tab >= 0:
            self.fail("tab character used for indentation", tab)

    def line_end(self, p):
        """After a node in block context: only a comment may follow on its line."""
        s = self.s
        q = _WS.match(s, p).end()
        c = s[q]
        if c == "\n" or c == "\x00" or (c == "#" and q > p):
            return self.skip(q)
        if c == "#":
            self.fail("a comment must be separated from the value by whitespace", q)
        if c == ":":
            self.fail("mapping values are not allowed here", q)
        self.fail("unexpected text after the value", q)

    def ends(self, q, n, ctx):
        """True if the node expected below a line indented n is empty (next content at q)."""
        if q >= self.end:
            return True
        start = self.s.rfind("\n", 0, q) + 1
        if q == start and self.is_marker(q):
            return True
        if _SPACES.match(self.s, start, q).end() - start > n:
            return False
        return not (q - start == n and ctx & _SAME_SEQ and self.s[q] == "-"
                    and self.s[q + 1] in _WS_EOL)

    def enter(self, p):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail("collections nested deeper than %d levels" % MAX_DEPTH, p)

    # -- stream and documents (9.1, 9.2, 6.8) ------------------------------------------

    def stream(self):
        s, docs = self.s, []
        p = self.skip(0)
        while p < self.end:
            self.anchors, self.handles = {}, {}
            start, directives = p, False
            while s[p] == "%" and self.col(p) == 0:
                p = self.skip(self.directive(p))
                directives = True
            if self.is_marker(p) and s[p] == "-":
                value, p = self.block_node(p + 3, -1, _DOC)
            elif directives:
                self.fail("directives must be followed by a '---' document start", p)
            elif self.is_marker(p):
                p = self.document_end(p)
                continue
            else:
                value, p = self.block_content(p, -1, _DOC, 0, None)
            docs.append(value)
            self.starts.append(start)
            if self.first_only and self.is_marker(p):
                break
            if p < self.end:
                if self.is_marker(p) and s[p] == ".":
                    p = self.document_end(p)
                elif not self.is_marker(p):
                    if s[p] == "%" and self.col(p) == 0:
                        self.fail("a directive must follow a '...' document end marker", p)
                    self.fail("unexpected content after the document's root node"
                              " (expected '---', '...' or the end of the input)", p)
        return docs

    def document_end(self, p):
        q = _WS.match(self.s, p + 3).end()
        if self.s[q] not in "#\n\x00":
            self.fail("unexpected text after the '...' document end marker", q)
        return self.skip(q)

    def directive(self, p):
        """A '%' line (6.8); returns the position of its end."""
        s = self.s
        eol = s.find("\n", p)
        eol = self.end if eol < 0 else eol
        words = re.split(r"[ \t]+", re.sub(r"[ \t]+#.*", "", s[p + 1:eol]).strip(" \t"))
        name, args = words[0], words[1:]
        if name == "YAML":
            if "YAML" in self.handles:
                self.fail("repeated %YAML directive", p)
            if len(args) != 1 or re.match(r"[0-9]+\.[0-9]+\Z", args[0]) is None:
                self.fail("a %YAML directive takes one version number", p)
            if args[0].split(".")[0] != "1":
                self.fail("unsupported YAML version %s" % args[0], p)
            self.handles["YAML"] = args[0]
        elif name == "TAG":
            if len(args) != 2 or _HANDLE.match(args[0]) is None:
                self.fail("a %TAG directive takes a handle and a prefix", p)
            if args[0] in self.handles:
                self.fail("repeated %%TAG directive for %s" % args[0], p)
            self.handles[args[0]] = _unescape_uri(args[1])
        elif not name:
            self.fail("a directive needs a name", p)
        return eol   # other names are reserved for future use: ignored (6.8)

    # -- block nodes (8.2) ---------------------------------------------------------------

    def block_node(self, p, n, ctx):
        """The node after an indicator ('-', '?', ':', '---'), p just after it.

        ``n`` is the indentation of the parent collection (-1 for a document).
        Returns ``(value, q)``, q being the first content of the next line (or the end).
        """
        q = _WS.match(self.s, p).end()
        if self.s[q] in "\n\x00#":
            q = self.skip(q)
            if self.ends(q, n, ctx):
                return self.finish("empty", None, _NO_PROPS, q), q
            return self.block_content(q, n, ctx, 0, None)
        return self.block_content(q, n, ctx, p, None)

    def block_content(self, p, n, ctx, inline, outer):
        """A block node whose first character is at p.

        ``inline`` is the position just after the indicator when the node starts on the
        indicator's line, else 0. ``outer`` holds properties read on an earlier line:
        (tag, tag position, anchor, node count).
        """
        s = self.s
        start = p
        props = _NO_PROPS
        if s[p] == "!" or s[p] == "&":
            props = self.properties(p, False)
            p = props[4]
            q = _WS.match(s, p).end()
            if s[q] in "\n\x00#":   # properties alone on their line: they are the node's
                props = self.merge(outer, props, start)
                q = self.skip(q)
                if self.ends(q, n, ctx):
                    return self.finish("empty", None, props, start), q
                return self.block_content(q, n, ctx, 0, props)
            p = q
        c = s[p]
        with_props = props[0] is not None or props[2] is not None
        if c in "-?:" and s[p + 1] in _WS_EOL and not (c == ":" and with_props):
            if with_props:
                self.fail("a block collection must start on the line after its properties", p)
            self.collection_start(p, ctx, inline, c == "-")
            if c == "-":
                value, q = self.block_sequence(p, self.col(p))
                kind = "seq"
            else:
                value, q = self.block_mapping(p, self.col(p), None)
                kind = "map"
        elif c == "|" or c == ">":
            value, q = self.block_scalar(p, n)
            kind = "block"
        else:
            if c == ":" and s[p + 1] in _WS_EOL:   # an empty key with properties: "!!null : a"
                kind, value, q = "empty", None, p
            else:
                kind, value, q = self.flow_content(p, n, False)
            r = _WS.match(s, q).end()
            if s[r] == ":" and s[r + 1] in _WS_EOL:   # an implicit key: a block mapping
                self.collection_start(start, ctx, inline, False, r)
                key = self.finish(kind, value, props, start)
                self.check_key(key, start, r)
                value, q = self.block_mapping(start, self.col(start), (key, start, r + 1))
                kind = "map"
                props = _NO_PROPS
            else:
                q = self.line_end(q)
        props = self.merge(outer, props, start)
        return self.finish(kind, value, props, start), q

    def collection_start(self, p, ctx, inline, seq, colon=0):
        """Check where a block collection starts: compact only after '-', '?', ':' (8.2)."""
        if not inline:
            self.check_tab(p)
        elif not ctx & _COMPACT:
            if colon:
                self.fail("mapping values are not allowed here", colon)
            self.fail("a block %s cannot start on this line"
                      % ("sequence" if seq else "mapping"), p)
        else:
            self.check_tab(p, inline)

    def merge(self, outer, inner, pos):
        """Properties of one node given on two lines (tag, tag position, anchor, count)."""
        if outer is None:
            return inner
        tag, tagpos, anchor, before = outer[:4]
        if inner[0] is not None:
            if tag is not None:
                self.fail("a node can have only one tag", pos)
            tag, tagpos = inner[0], inner[1]
        if inner[2] is not None:
            if anchor is not None:
                self.fail("a node can have only one anchor", pos)
            anchor = inner[2]
        return tag, tagpos, anchor, before

    def duplicate(self, mapping, key, pos):
        """Refuse a key equal to an earlier one (3.2.1.3), such as 1 after 0x1 or true."""
        first = next(k for k in mapping if k == key)
        if type(first) is type(key):
            self.fail("duplicate key %s" % _show(key), pos)
        self.fail("key %s is the same Python key as the earlier key %s"
                  % (_show(key), _show(first)), pos)

    def put(self, result, written, key, value, kpos):
        """Add one entry read at kpos; ``written`` holds the keys written so far (GO_YAML)."""
        if not self.go:
            if key in result:
                self.duplicate(result, key, kpos)
            result[key] = value
            return
        if key == "<<" and self.merge_at == kpos:
            self.merge_into(result, value, kpos)
            return
        key = _go_key(key)
        if key is None:
            self.fail("a null mapping key has no JSON form (kubectl refuses it)", kpos)
        if key in written:
            self.fail("duplicate key %s" % _show(key), kpos)
        written.add(key)
        result[key] = value

    def merge_into(self, result, value, kpos):
        """GO_YAML: a merge key's value, a mapping or a list of them; the earlier ones in a list win."""
        if isinstance(value, dict):
            result.update(value)
            return
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            for item in reversed(value):
                result.update(item)
            return
        self.fail("a merge key (<<) needs a mapping or a list of mappings as its value", kpos)

    def check_key(self, key, start, colon):
        if isinstance(key, (dict, list)):
            self.fail("complex mapping keys are not supported", start)
        if key == "<<" and not self.go and self.s.startswith("<<", start):
            self.fail("merge keys (<<) belong to YAML 1.1 and are not supported; write the entries out", start)
        if self.s.find("\n", start, colon) >= 0:
            self.fail("an implicit mapping key must be on a single line", start)

    def block_mapping(self, p, m, first):
        """Entries at column m (8.2.2); ``first`` is an already read (key, pos, after ':')."""
        s = self.s
        self.enter(p)
        result, written = {}, set()
        while True:
            if first is not None:
                key, kpos, q = first
                first = None
                value, p = self.block_node(q, m, _MAP_VALUE)
            elif s[p] == "?" and s[p + 1] in _WS_EOL:
                kpos = p
                key, p = self.block_node(p + 1, m, _EXPLICIT)
                self.check_key(key, kpos, kpos)
                if (p < self.end and s[p] == ":" and s[p + 1] in _WS_EOL
                        and self.col(p) == m):
                    value, p = self.block_node(p + 1, m, _EXPLICIT)
                else:
                    value = None
            else:
                kpos = p
                if s[p] == ":" and s[p + 1] in _WS_EOL:
                    key, q = None, p + 1
                else:
                    key, q = self.implicit_key(p, m)
                value, p = self.block_node(q, m, _MAP_VALUE)
            self.put(result, written, key, value, kpos)
            if p >= self.end:
                break
            self.check_tab(p)
            col = self.col(p)
            if col < m or (col == 0 and self.is_marker(p)):
                break
            if col > m:
                self.fail("bad indentation of a mapping entry (expected column %d)"
                          % (m + 1), p)
        self.depth -= 1
        return result, p

    def implicit_key(self, p, m):
        """``key:`` at p in a block mapping at column m; returns (key, position after ':')."""
        s = self.s
        if s[p] == "-" and s[p + 1] in _WS_EOL:
            self.fail("expected a mapping entry ('key: value'), found a sequence entry", p)
        props, q = _NO_PROPS, p
        if s[p] == "!" or s[p] == "&":
            props = self.properties(p, False)
            q = _WS.match(s, props[4]).end()
        if s[q] == ":" and s[q + 1] in _WS_EOL and props is not _NO_PROPS:
            kind, value = "empty", None
        else:
            kind, value, q = self.flow_content(q, m, False)
        r = _WS.match(s, q).end()
        if s[r] != ":" or s[r + 1] not in _WS_EOL:
            self.fail("expected ':' after a mapping key", r)
        key = self.finish(kind, value, props, p)
        self.check_key(key, p, r)
        return key, r + 1

    def block_sequence(self, p, m):
        """Entries '- ' at column m (8.2.1)."""
        s = self.s
        self.enter(p)
        items = []
        while True:
            value, p = self.block_node(p + 1, m, _SEQ_ENTRY)
            items.append(value)
            if p >= self.end:
                break
            self.check_tab(p)
            col = self.col(p)
            if col < m or (col == 0 and self.is_marker(p)):
                break
            if col > m:
                self.fail("bad indentation of a sequence entry (expected column %d)"
                          % (m + 1), p)
            if s[p] != "-" or s[p + 1] not in _WS_EOL:
                break
        self.depth -= 1
        return items, p

    def block_scalar(self, p, n):
        """A '|' or '>' scalar (8.1) below a parent indented n; returns (text, next content)."""
        s = self.s
        literal = s[p] == "|"
        q = p + 1
        chomp, indent = "", None
        for _ in range(2):
            if s[q] in "+-" and not chomp:
                chomp = s[q]
                q += 1
            elif s[q] in "123456789" and indent is None:
                indent = max(n, 0) + int(s[q])
                q += 1
        r = _WS.match(s, q).end()
        if s[r] == "#" and r > q:
            r = s.find("\n", r)
            r = self.end if r < 0 else r
        if s[r] not in "\n\x00":
            self.fail("invalid block scalar header", r)
        lines, lead, end = [], 0, self.end   # lines: text after the indentation, or None
        pos = min(r + 1, end)
        while pos < end:
            eol = s.find("\n", pos)
            sp = _SPACES.match(s, pos, eol).end() - pos
            if sp == eol - pos and (indent is None or sp <= indent):
                lines.append(None)
                lead = max(lead, sp)
                pos = eol + 1
                continue
            if indent is None:
                if sp <= n or (sp == 0 and self.is_marker(pos)):
                    break
                indent = sp
                if lead > indent:
                    self.fail("a leading empty line of the block scalar is more indented"
                              " than its first line", pos + indent)
            if sp < indent or sp <= n or (sp == 0 and self.is_marker(pos)):
                break
            lines.append(s[pos + indent:eol])
            pos = eol + 1
        if pos < end and s[pos + sp] == "\t":
            self.fail("tab character used for indentation", pos + sp)
        trailing = 0
        while lines and lines[-1] is None:
            lines.pop()
            trailing += 1
        if literal:
            text = "\n".join(line or "" for line in lines)
        else:
            text = _fold_block(lines)
        if lines and chomp != "-":
            text += "\n"
        if chomp == "+":
            text += "\n" * trailing
        return text, self.skip(pos - 1 if pos < end else end)

    # -- flow nodes (7) ------------------------------------------------------------------

    def flow_content(self, p, n, flow):
        """Alias, quoted or plain scalar, or flow collection at p: (kind, value, end)."""
        s = self.s
        c = s[p]
        if c == '"':
            text, q = self.double_quoted(p, n)
            return "quoted", text, q
        if c == "'":
            text, q = self.single_quoted(p, n)
            return "quoted", text, q
        if c == "[" or c == "{":
            value, q = self.flow_collection(p, n)
            return ("seq" if c == "[" else "map"), value, q
        if c == "*":
            m = _ANCHOR.match(s, p + 1)
            if m is None:
                self.fail("an alias needs a name after '*'", p)
            entry = self.anchors.get(m.group())
            if entry is None:
                self.fail("undefined alias %r" % m.group(), p)
            self.count(entry[1], p)
            return "alias", entry[0], m.end()
        text, q = self.plain(p, n, flow)
        return "plain", text, q

    def flow_node(self, p, n):
        """A node inside a flow collection: (value, end, json_like) (7.1-7.5)."""
        s = self.s
        props, start = _NO_PROPS, p
        if p >= self.end:
            self.fail("unterminated flow collection", p)
        if s[p] == "!" or s[p] == "&":
            props = self.properties(p, True)
            p = self.flow_ws(props[4], n)
            c = s[p]
            if c in ",]}" or (c == ":" and s[p + 1] in _FLOW_END):
                return self.finish("empty", None, props, start), p, False
        kind, value, q = self.flow_content(p, n, True)
        value = self.finish(kind, value, props, start)
        return value, q, kind in ("quoted", "map", "seq")

    def flow_ws(self, p, n):
        """Skip separation, line breaks and comments inside a flow collection (6.2-6.7).

        Lines with content must be indented more than the enclosing block (n).
        """
        s = self.s
        while True:
            q = _WS.match(s, p).end()
            c = s[q]
            if c == "#":
                if q == p and s[p - 1] not in " \t\n":
                    return q
                q = s.find("\n", q)
                q = self.end if q < 0 else q
                c = s[q]
            if c != "\n":
                return q
            p = q + 1
            r = _WS.match(s, p).end()
            if s[r] not in "\n#\x00":
                if self.is_marker(r):
                    self.fail("document marker inside a flow collection", r)
                if _SPACES.match(s, p).end() - p <= n:
                    self.fail("bad indentation inside a flow collection"
                              " (expected more than %d spaces)" % n, r)

    def flow_collection(self, p, n):
        """'[...]' or '{...}' at p (7.4, 7.5); returns (list or dict, end)."""
        s = self.s
        start, is_map = p, s[p] == "{"
        close = "}" if is_map else "]"
        self.enter(p)
        result = {} if is_map else []
        written = set()
        p = self.flow_ws(p + 1, n)
        while s[p] != close:
            if p >= self.end:
                self.fail("unterminated flow %s" % ("mapping" if is_map else "sequence"), start)
            kpos = p
            explicit = s[p] == "?" and s[p + 1] in _FLOW_END
            if explicit:
                p = self.flow_ws(p + 1, n)
            c = s[p]
            if c == "," or c == close or (c == ":" and s[p + 1] in _FLOW_END):
                if c != ":" and not explicit:
                    self.fail("unexpected %r in a flow collection" % c, p)
                key, json_like = self.finish("empty", None, _NO_PROPS, p), False
            else:
                key, p, json_like = self.flow_node(p, n)
                p = self.flow_ws(p, n)
            pair = explicit or is_map
            if s[p] == ":" and (json_like or s[p + 1] in _FLOW_END):
                if not pair and s.find("\n", kpos, p) >= 0:
                    self.fail("an implicit key in a flow sequence must be on a single line", kpos)
                pair = True
                p = self.flow_ws(p + 1, n)
                if s[p] == "," or s[p] == close:
                    value = self.finish("empty", None, _NO_PROPS, p)
                else:
                    value, p, _ = self.flow_node(p, n)
                    p = self.flow_ws(p, n)
            else:
                value = None
            if pair and isinstance(key, (dict, list)):
                self.fail("complex mapping keys are not supported", kpos)
            if is_map:
                self.put(result, written, key, value, kpos)
            elif pair:
                single = {}
                self.put(single, set(), key, value, kpos)
                result.append(single)
                self.count(1, kpos)
            else:
                result.append(key)
            if s[p] == ",":
                p = self.flow_ws(p + 1, n)
            elif s[p] != close:
                if p >= self.end:
                    self.fail("unterminated flow %s" % ("mapping" if is_map else "sequence"),
                              start)
                self.fail("expected ',' or '%s' in a flow collection" % close, p)
        self.depth -= 1
        return result, p + 1

    # -- scalars (7.3) -------------------------------------------------------------------

    def plain(self, p, n, flow):
        """A plain scalar at p (7.3.3), folded over lines indented more than n."""
        s = self.s
        c = s[p]
        if c in _INDICATORS or c in _WS_EOL:
            nxt = s[p + 1]
            if not (c in "-?:" and nxt not in _WS_EOL and not (flow and nxt in ",[]{}")):
                self.fail(_unexpected(c, flow), p)
        rx = _PLAIN_FLOW if flow else _PLAIN_BLOCK
        end = rx.match(s, p + 1).end()
        chunks = None
        while True:
            q = _WS.match(s, end).end()
            if s[q] != "\n":
                break
            breaks = 0
            while True:
                ls = q + 1
                r = _WS.match(s, ls).end()
                if s[r] != "\n":
                    break
                breaks += 1
                q = r
            c = s[r]
            if (c == "\x00" or c == "#" or _SPACES.match(s, ls).end() - ls <= n
                    or (r == ls and self.is_marker(r))):
                break
            e = rx.match(s, r).end()
            if e == r:
                break
            if chunks is None:
                chunks = [s[p:end]]
            chunks.append(" " if breaks == 0 else "\n" * breaks)
            chunks.append(s[r:e])
            end = e
        return (s[p:end] if chunks is None else "".join(chunks)), end

    def fold(self, q, n, start, what):
        """Line breaks inside a quoted scalar (7.3.1, 6.5), q at the first one.

        Returns (position of the next line's content, number of empty lines).
        """
        s = self.s
        breaks = 0
        while True:
            ls = q + 1
            r = _WS.match(s, ls).end()
            c = s[r]
            if c == "\n":
                breaks += 1
                q = r
                continue
            if c == "\x00":
                self.fail("unterminated %s string" % what, start)
            if r == ls and self.is_marker(r):
                self.fail("document marker inside a %s string" % what, r)
            if _SPACES.match(s, ls).end() - ls <= n:
                self.fail("a continuation line of a %s string must be indented more"
                          " than its parent" % what, r)
            return r, breaks

    def double_quoted(self, p, n):
        s = self.s
        start, p, chunks = p, p + 1, []
        while True:
            q = _DQ_RUN.match(s, p).end()
            c = s[q]
            if c == '"':
                chunks.append(s[p:q])
                return "".join(chunks), q + 1
            if c == "\\":
                chunks.append(s[p:q])
                e = s[q + 1]
                if e in _ESCAPES:
                    chunks.append(_ESCAPES[e])
                    p = q + 2
                elif e in _HEX_SIZE:
                    code, p = self.hex_escape(q, e)
                    chunks.append(chr(code))
                elif e == "\n":
                    p, breaks = self.fold(q + 1, n, start, "double-quoted")
                    chunks.append("\n" * breaks)
                elif e == "\x00":
                    self.fail("unterminated double-quoted string", start)
                else:
                    self.fail("invalid escape sequence %r" % ("\\" + e), q)
            elif c == "\n":
                chunks.append(s[p:q].rstrip(" \t"))
                p, breaks = self.fold(q, n, start, "double-quoted")
                chunks.append(" " if breaks == 0 else "\n" * breaks)
            else:
                self.fail("unterminated double-quoted string", start)

    def hex_escape(self, q, e):
        """\\x, \\u, \\U at q; a \\u surrogate pair is joined (as in JSON)."""
        s = self.s
        size = _HEX_SIZE[e]
        digits = s[q + 2:q + 2 + size]
        if len(digits) != size or _HEX.match(digits) is None:
            self.fail("invalid escape sequence %r: expected %d hexadecimal digits"
                      % ("\\" + e, size), q)
        code, p = int(digits, 16), q + 2 + size
        if 0xD800 <= code < 0xDC00 and e == "u" and s.startswith("\\u", p):
            low = s[p + 2:p + 6]
            if len(low) == 4 and _HEX.match(low) and 0xDC00 <= int(low, 16) < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                p += 6
        if 0xD800 <= code < 0xE000 or code > 0x10FFFF:
            self.fail("invalid escape sequence: U+%X is not a character" % code, q)
        return code, p

    def single_quoted(self, p, n):
        s = self.s
        start, p, chunks = p, p + 1, []
        while True:
            q = _SQ_RUN.match(s, p).end()
            c = s[q]
            if c == "'":
                if s[q + 1] == "'":
                    chunks.append(s[p:q + 1])
                    p = q + 2
                    continue
                chunks.append(s[p:q])
                return "".join(chunks), q + 1
            if c == "\n":
                chunks.append(s[p:q].rstrip(" \t"))
                p, breaks = self.fold(q, n, start, "single-quoted")
                chunks.append(" " if breaks == 0 else "\n" * breaks)
            else:
                self.fail("unterminated single-quoted string", start)

    # -- properties and values (6.9, 10) -------------------------------------------------

    def properties(self, p, flow):
        """Tag and/or anchor at p: (tag, tag position, anchor, node count, end)."""
        s = self.s
        tag = anchor = None
        tagpos = 0
        while True:
            if s[p] == "!":
                if tag is not None:
                    self.fail("a node can have only one tag", p)
                tagpos = p
                tag, p = self.tag(p)
            else:
                if anchor is not None:
                    self.fail("a node can have only one anchor", p)
                m = _ANCHOR.match(s, p + 1)
                if m is None:
                    self.fail("an anchor needs a name after '&'", p)
                anchor, p = m.group(), m.end()
            c = s[p]
            if c == " " or c == "\t":
                q = _WS.match(s, p).end()
                if s[q] == "!" or s[q] == "&":
                    p = q
                    continue
            elif c not in "\n\x00" and not (flow and c in ",[]{}"):
                self.fail("expected whitespace after a tag or anchor", p)
            return tag, tagpos, anchor, self.nodes, p

    def tag(self, p):
        """A tag at p (6.9.1): its name in _KNOWN_TAGS, or "!" for the non-specific tag."""
        m = _TAG.match(self.s, p)
        verbatim, handle, suffix = m.groups()
        if verbatim is not None:
            full = _unescape_uri(verbatim)
        elif handle is None and not suffix:
            return "!", m.end()
        else:
            handle = "!" if handle is None else "!" + handle + "!"
            prefix = self.handles.get(handle)
            if prefix is None and handle in ("!", "!!"):
                prefix = "!" if handle == "!" else _YAML_TAG
            if prefix is None:
                self.fail("undefined tag handle %r" % handle, p)
            if not suffix:
                self.fail("a tag needs a name after %r" % handle, p)
            full = prefix + _unescape_uri(suffix)
        name = full[len(_YAML_TAG):] if full.startswith(_YAML_TAG) else None
        if self.go:
            return (name if name in _GO_TAGS or name == "merge" else _UNKNOWN), m.end()
        if name not in _KNOWN_TAGS:
            self.fail("unknown tag %r" % m.group(), p)
        return name, m.end()

    def count(self, nodes, p):
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            self.fail("more than %d nodes once aliases are expanded" % MAX_NODES, p)

    def finish(self, kind, value, props, pos):
        """The Python value of a parsed node, its tag applied and its anchor recorded.

        ``props`` is (tag, tag position, anchor, node count when the anchor was read).
        """
        tag, tagpos, anchor, before = props[:4]
        if kind == "alias":
            if tag is not None or anchor is not None:
                self.fail("an alias cannot have a tag or an anchor", pos)
            return value
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.count(0, pos)
        if self.go:
            value = self.finish_go(kind, value, tag, pos)
        elif tag is None:
            if kind == "plain":
                try:
                    value = _resolve(value)
                except ValueError:
                    self.fail("integer too large", pos)
        elif kind == "map" or kind == "seq":
            if tag != kind and tag != "!":
                self.fail("tag !!%s cannot be applied to a %s"
                          % (tag, "mapping" if kind == "map" else "sequence"), tagpos)
        elif tag == "map" or tag == "seq":
            self.fail("tag !!%s cannot be applied to a scalar" % tag, tagpos)
        elif tag == "!" or tag == "str":
            value = value or ""
        else:
            try:
                made = _construct(tag, value or "")
            except ValueError:
                made = None
            if made is None:
                self.fail("invalid !!%s value %s" % (tag, _show(value or "")), pos)
            value = made if tag == "binary" else made[0]
        if anchor is not None:
            self.anchors[anchor] = (value, self.nodes - before)
        return value

    def finish_go(self, kind, value, tag, pos):
        """GO_YAML: the value of a node of ``kind`` under ``tag`` (None: no tag), as go-yaml v2 decodes it."""
        if kind == "map" or kind == "seq":
            return value   # go-yaml v2 decodes a collection whatever its tag says
        if kind == "plain" and value == "<<" and tag in (None, "merge"):
            self.merge_at = pos
        if tag is None:
            if kind == "plain":
                value = resolve_go_yaml(value)
                if isinstance(value, float) and not math.isfinite(value):
                    self.nonfinite.append((value, pos))
                return value
            return None if kind == "empty" else value
        if tag not in _GO_TAGS or tag == "str":
            return value or ""
        made = _go_construct(tag, value or "")
        if made is None:
            if tag == "binary":
                self.fail("invalid !!binary value: not base64", pos)
            self.fail("invalid !!%s value %s" % (tag, _show(value or "")), pos)
        if isinstance(made[0], float) and not math.isfinite(made[0]):
            self.nonfinite.append((made[0], pos))
        return made[0]


def _fold_block(lines):
    """Folded block scalar content (8.1.3): lines, None for an empty one."""
    out, prev, empties = [], None, 0
    for line in lines:
        if line is None:
            empties += 1
            continue
        if prev is None:
            out.append("\n" * empties)
        elif prev[0] in " \t" or line[0] in " \t":
            out.append("\n" * (empties + 1))
        else:
            out.append(" " if empties == 0 else "\n" * empties)
        out.append(line)
        prev, empties = line, 0
    return "".join(out)


def _unexpected(c, flow):
    if c in "|>" and flow:
        return "block scalars are not allowed inside a flow collection"
    if c == "%":
        return "unexpected '%' (a directive can only come before '---')"
    if c in "@`":
        return "the character %r is reserved and cannot start a plain scalar" % c
    if c == "\x00":
        return "unexpected end of input"
    if c in " \t\n":
        return "expected a value"
    return "unexpected character %r" % c


def _unescape_uri(text):
    """Tag URIs may escape characters as %XX (6.9.1)."""
    if "%" not in text:
        return text
    raw = re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeError, ValueError):
        return raw
