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

import collections
import math
import re

from .block import CORE, GO_YAML, resolve_go_yaml
from .schema import _GO_TAGS, _KNOWN_TAGS, _UNKNOWN, _YAML_TAG, _construct, _go_construct, _go_key, _resolve
from ...errors import YAMLError

__all__ = ["load", "load_all", "load_first", "CORE", "GO_YAML", "MAX_DEPTH", "MAX_NODES"]

MAX_DEPTH = 100
MAX_NODES = 1000000

# Contexts of a block node (8.2): what may start on the indicator's line, and whether a
# sequence may sit at the parent's own column ("key:" then "- a").
_COMPACT, _SAME_SEQ = 1, 2
_DOC, _SEQ_ENTRY, _MAP_VALUE, _EXPLICIT = 0, _COMPACT, _SAME_SEQ, _COMPACT | _SAME_SEQ

# A node's properties (6.9): its tag (a name of _KNOWN_TAGS, "!" for the non-specific tag, or None) and where
# the tag was read, its anchor (or None), and the node count when they were read (an alias of the anchor counts
# the nodes read since).
_Properties = collections.namedtuple("_Properties", "tag tag_pos anchor nodes_before")
_NO_PROPERTIES = _Properties(None, 0, None, 0)

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

    Names as in the specification's productions: ``pos`` is where a method starts reading in
    ``self.text``, ``indent`` the indentation of the parent node (the spec's n), ``context`` what
    may start on the current line (the spec's c), ``column`` the column of a block
    collection's entries; ``q`` and ``r`` are positions further on, ``c`` the character at one.
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
        self.text = text + "\x00" * 4   # sentinels: control characters are refused below
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
        line = self.text.count("\n", 0, pos) + 1
        column = pos - self.text.rfind("\n", 0, pos)
        raise YAMLError(problem, self.filename, line, column)

    def run(self):
        bad = _BAD_CHAR.search(self.text, 0, self.end)
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

    def col(self, pos):
        return pos - self.text.rfind("\n", 0, pos) - 1

    def is_marker(self, pos):
        """True if a '---' or '...' document marker starts at pos (6.8, 9.1)."""
        text = self.text
        return ((pos == 0 or text[pos - 1] == "\n") and text.startswith(("---", "..."), pos)
                and text[pos + 3] in _WS_EOL)

    def skip(self, pos):
        """From pos (a line start, a line end or a comment) skip blank and comment lines.

        Returns the position of the next content character, or ``self.end``.
        """
        text = self.text
        if text[pos] == "#":
            pos = text.find("\n", pos)
            if pos < 0:
                return self.end
        if text[pos] == "\n":
            pos += 1
        return _SKIP.match(text, pos).end()

    def check_tab(self, pos, start=None):
        """Block structure is indented by spaces only (6.1): no tab before pos on its line."""
        if start is None:
            start = self.text.rfind("\n", 0, pos) + 1
        tab = self.text.find("\t", start, pos)
        if tab >= 0:
            self.fail("tab character used for indentation", tab)

    def line_end(self, pos):
        """After a node in block context: only a comment may follow on its line."""
        text = self.text
        q = _WS.match(text, pos).end()
        c = text[q]
        if c == "\n" or c == "\x00" or (c == "#" and q > pos):
            return self.skip(q)
        if c == "#":
            self.fail("a comment must be separated from the value by whitespace", q)
        if c == ":":
            self.fail("mapping values are not allowed here", q)
        self.fail("unexpected text after the value", q)

    def ends(self, pos, indent, context):
        """True if the node expected below a line indented ``indent`` (in ``context``) is empty; its next
        content is at pos."""
        if pos >= self.end:
            return True
        start = self.text.rfind("\n", 0, pos) + 1
        if pos == start and self.is_marker(pos):
            return True
        if _SPACES.match(self.text, start, pos).end() - start > indent:
            return False
        return not (pos - start == indent and context & _SAME_SEQ and self.text[pos] == "-"
                    and self.text[pos + 1] in _WS_EOL)

    def enter(self, pos):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail("collections nested deeper than %d levels" % MAX_DEPTH, pos)

    # -- stream and documents (9.1, 9.2, 6.8) ------------------------------------------

    def stream(self):
        text, docs = self.text, []
        pos = self.skip(0)
        while pos < self.end:
            self.anchors, self.handles = {}, {}
            start, directives = pos, False
            while text[pos] == "%" and self.col(pos) == 0:
                pos = self.skip(self.directive(pos))
                directives = True
            if self.is_marker(pos) and text[pos] == "-":
                value, pos = self.block_node(pos + 3, -1, _DOC)
            elif directives:
                self.fail("directives must be followed by a '---' document start", pos)
            elif self.is_marker(pos):
                pos = self.document_end(pos)
                continue
            else:
                value, pos = self.block_content(pos, -1, _DOC, 0, None)
            docs.append(value)
            self.starts.append(start)
            if self.first_only and self.is_marker(pos):
                break
            if pos < self.end:
                if self.is_marker(pos) and text[pos] == ".":
                    pos = self.document_end(pos)
                elif not self.is_marker(pos):
                    if text[pos] == "%" and self.col(pos) == 0:
                        self.fail("a directive must follow a '...' document end marker", pos)
                    self.fail("unexpected content after the document's root node"
                              " (expected '---', '...' or the end of the input)", pos)
        return docs

    def document_end(self, pos):
        q = _WS.match(self.text, pos + 3).end()
        if self.text[q] not in "#\n\x00":
            self.fail("unexpected text after the '...' document end marker", q)
        return self.skip(q)

    def directive(self, pos):
        """A '%' line (6.8); returns the position of its end."""
        text = self.text
        eol = text.find("\n", pos)
        eol = self.end if eol < 0 else eol
        words = re.split(r"[ \t]+", re.sub(r"[ \t]+#.*", "", text[pos + 1:eol]).strip(" \t"))
        name, args = words[0], words[1:]
        if name == "YAML":
            if "YAML" in self.handles:
                self.fail("repeated %YAML directive", pos)
            if len(args) != 1 or re.match(r"[0-9]+\.[0-9]+\Z", args[0]) is None:
                self.fail("a %YAML directive takes one version number", pos)
            if args[0].split(".")[0] != "1":
                self.fail("unsupported YAML version %s" % args[0], pos)
            self.handles["YAML"] = args[0]
        elif name == "TAG":
            if len(args) != 2 or _HANDLE.match(args[0]) is None:
                self.fail("a %TAG directive takes a handle and a prefix", pos)
            if args[0] in self.handles:
                self.fail("repeated %%TAG directive for %s" % args[0], pos)
            self.handles[args[0]] = _unescape_uri(args[1])
        elif not name:
            self.fail("a directive needs a name", pos)
        return eol   # other names are reserved for future use: ignored (6.8)

    # -- block nodes (8.2) ---------------------------------------------------------------

    def block_node(self, pos, indent, context):
        """The node after an indicator ('-', '?', ':', '---'), pos just after it.

        ``indent`` is the indentation of the parent collection (-1 for a document), ``context``
        one of ``_DOC``, ``_SEQ_ENTRY``, ``_MAP_VALUE``, ``_EXPLICIT``. Returns ``(value, end)``,
        end being the first content of the next line (or the end of the input).
        """
        q = _WS.match(self.text, pos).end()
        if self.text[q] in "\n\x00#":
            q = self.skip(q)
            if self.ends(q, indent, context):
                return self.finish("empty", None, _NO_PROPERTIES, q), q
            return self.block_content(q, indent, context, 0, None)
        return self.block_content(q, indent, context, pos, None)

    def block_content(self, pos, indent, context, inline, outer):
        """A block node whose first character is at pos.

        ``inline`` is the position just after the indicator when the node starts on the
        indicator's line, else 0. ``outer`` holds the :data:`_Properties` read on an earlier
        line, or None.
        """
        text = self.text
        start = pos
        props = _NO_PROPERTIES
        if text[pos] == "!" or text[pos] == "&":
            props, pos = self.properties(pos, False)
            q = _WS.match(text, pos).end()
            if text[q] in "\n\x00#":   # properties alone on their line: they are the node's
                props = self.merge(outer, props, start)
                q = self.skip(q)
                if self.ends(q, indent, context):
                    return self.finish("empty", None, props, start), q
                return self.block_content(q, indent, context, 0, props)
            pos = q
        c = text[pos]
        with_props = props is not _NO_PROPERTIES   # properties() reads a tag or an anchor, or fails
        if c in "-?:" and text[pos + 1] in _WS_EOL and not (c == ":" and with_props):
            if with_props:
                self.fail("a block collection must start on the line after its properties", pos)
            self.collection_start(pos, context, inline, c == "-")
            if c == "-":
                value, q = self.block_sequence(pos, self.col(pos))
                kind = "seq"
            else:
                value, q = self.block_mapping(pos, self.col(pos), None)
                kind = "map"
        elif c == "|" or c == ">":
            value, q = self.block_scalar(pos, indent)
            kind = "block"
        else:
            if c == ":" and text[pos + 1] in _WS_EOL:   # an empty key with properties: "!!null : a"
                kind, value, q = "empty", None, pos
            else:
                kind, value, q = self.flow_content(pos, indent, False)
            r = _WS.match(text, q).end()
            if text[r] == ":" and text[r + 1] in _WS_EOL:   # an implicit key: a block mapping
                self.collection_start(start, context, inline, False, r)
                key = self.finish(kind, value, props, start)
                self.check_key(key, start, r)
                value, q = self.block_mapping(start, self.col(start), (key, start, r + 1))
                kind = "map"
                props = _NO_PROPERTIES
            else:
                q = self.line_end(q)
        props = self.merge(outer, props, start)
        return self.finish(kind, value, props, start), q

    def collection_start(self, pos, context, inline, seq, colon=0):
        """Check where a block collection starts: compact only after '-', '?', ':' (8.2)."""
        if not inline:
            self.check_tab(pos)
        elif not context & _COMPACT:
            if colon:
                self.fail("mapping values are not allowed here", colon)
            self.fail("a block %s cannot start on this line"
                      % ("sequence" if seq else "mapping"), pos)
        else:
            self.check_tab(pos, inline)

    def merge(self, outer, inner, pos):
        """The :data:`_Properties` of one node given on two lines: ``outer`` (None: none) read first."""
        if outer is None:
            return inner
        tag, tag_pos, anchor, nodes_before = outer
        if inner.tag is not None:
            if tag is not None:
                self.fail("a node can have only one tag", pos)
            tag, tag_pos = inner.tag, inner.tag_pos
        if inner.anchor is not None:
            if anchor is not None:
                self.fail("a node can have only one anchor", pos)
            anchor = inner.anchor
        return _Properties(tag, tag_pos, anchor, nodes_before)

    def duplicate(self, mapping, key, pos):
        """Refuse a key equal to an earlier one (3.2.1.3), such as 1 after 0x1 or true."""
        first = next(k for k in mapping if k == key)
        if type(first) is type(key):
            self.fail("duplicate key %s" % _show(key), pos)
        self.fail("key %s is the same Python key as the earlier key %s"
                  % (_show(key), _show(first)), pos)

    def put(self, result, written, key, value, key_pos):
        """Add one entry read at key_pos; ``written`` holds the keys written so far (GO_YAML)."""
        if not self.go:
            if key in result:
                self.duplicate(result, key, key_pos)
            result[key] = value
            return
        if key == "<<" and self.merge_at == key_pos:
            self.merge_into(result, value, key_pos)
            return
        key = _go_key(key)
        if key is None:
            self.fail("a null mapping key has no JSON form (kubectl refuses it)", key_pos)
        if key in written:
            self.fail("duplicate key %s" % _show(key), key_pos)
        written.add(key)
        result[key] = value

    def merge_into(self, result, value, key_pos):
        """GO_YAML: a merge key's value, a mapping or a list of them; the earlier ones in a list win."""
        if isinstance(value, dict):
            result.update(value)
            return
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            for item in reversed(value):
                result.update(item)
            return
        self.fail("a merge key (<<) needs a mapping or a list of mappings as its value", key_pos)

    def check_key(self, key, start, colon):
        if isinstance(key, (dict, list)):
            self.fail("complex mapping keys are not supported", start)
        if key == "<<" and not self.go and self.text.startswith("<<", start):
            self.fail("merge keys (<<) belong to YAML 1.1 and are not supported; write the entries out", start)
        if self.text.find("\n", start, colon) >= 0:
            self.fail("an implicit mapping key must be on a single line", start)

    def block_mapping(self, pos, column, first):
        """Entries at ``column`` (8.2.2); ``first`` is an already read (key, pos, after ':')."""
        text = self.text
        self.enter(pos)
        result, written = {}, set()
        while True:
            if first is not None:
                key, key_pos, q = first
                first = None
                value, pos = self.block_node(q, column, _MAP_VALUE)
            elif text[pos] == "?" and text[pos + 1] in _WS_EOL:
                key_pos = pos
                key, pos = self.block_node(pos + 1, column, _EXPLICIT)
                self.check_key(key, key_pos, key_pos)
                if (pos < self.end and text[pos] == ":" and text[pos + 1] in _WS_EOL
                        and self.col(pos) == column):
                    value, pos = self.block_node(pos + 1, column, _EXPLICIT)
                else:
                    value = None
            else:
                key_pos = pos
                if text[pos] == ":" and text[pos + 1] in _WS_EOL:
                    key, q = None, pos + 1
                else:
                    key, q = self.implicit_key(pos, column)
                value, pos = self.block_node(q, column, _MAP_VALUE)
            self.put(result, written, key, value, key_pos)
            if pos >= self.end:
                break
            self.check_tab(pos)
            col = self.col(pos)
            if col < column or (col == 0 and self.is_marker(pos)):
                break
            if col > column:
                self.fail("bad indentation of a mapping entry (expected column %d)"
                          % (column + 1), pos)
        self.depth -= 1
        return result, pos

    def implicit_key(self, pos, column):
        """``key:`` at pos in a block mapping at ``column``; returns (key, position after ':')."""
        text = self.text
        if text[pos] == "-" and text[pos + 1] in _WS_EOL:
            self.fail("expected a mapping entry ('key: value'), found a sequence entry", pos)
        props, q = _NO_PROPERTIES, pos
        if text[pos] == "!" or text[pos] == "&":
            props, q = self.properties(pos, False)
            q = _WS.match(text, q).end()
        if text[q] == ":" and text[q + 1] in _WS_EOL and props is not _NO_PROPERTIES:
            kind, value = "empty", None
        else:
            kind, value, q = self.flow_content(q, column, False)
        r = _WS.match(text, q).end()
        if text[r] != ":" or text[r + 1] not in _WS_EOL:
            self.fail("expected ':' after a mapping key", r)
        key = self.finish(kind, value, props, pos)
        self.check_key(key, pos, r)
        return key, r + 1

    def block_sequence(self, pos, column):
        """Entries '- ' at ``column`` (8.2.1)."""
        text = self.text
        self.enter(pos)
        items = []
        while True:
            value, pos = self.block_node(pos + 1, column, _SEQ_ENTRY)
            items.append(value)
            if pos >= self.end:
                break
            self.check_tab(pos)
            col = self.col(pos)
            if col < column or (col == 0 and self.is_marker(pos)):
                break
            if col > column:
                self.fail("bad indentation of a sequence entry (expected column %d)"
                          % (column + 1), pos)
            if text[pos] != "-" or text[pos + 1] not in _WS_EOL:
                break
        self.depth -= 1
        return items, pos

    def block_scalar(self, pos, indent):
        """A '|' or '>' scalar (8.1) below a parent indented ``indent``; returns (text, next content)."""
        text = self.text
        literal = text[pos] == "|"
        q = pos + 1
        chomp, content_indent = "", None
        for _ in range(2):
            if text[q] in "+-" and not chomp:
                chomp = text[q]
                q += 1
            elif text[q] in "123456789" and content_indent is None:
                content_indent = max(indent, 0) + int(text[q])
                q += 1
        r = _WS.match(text, q).end()
        if text[r] == "#" and r > q:
            r = text.find("\n", r)
            r = self.end if r < 0 else r
        if text[r] not in "\n\x00":
            self.fail("invalid block scalar header", r)
        lines, lead, end = [], 0, self.end   # lines: text after the indentation, or None
        line_start = min(r + 1, end)
        while line_start < end:
            eol = text.find("\n", line_start)
            sp = _SPACES.match(text, line_start, eol).end() - line_start
            if sp == eol - line_start and (content_indent is None or sp <= content_indent):
                lines.append(None)
                lead = max(lead, sp)
                line_start = eol + 1
                continue
            if content_indent is None:
                if sp <= indent or (sp == 0 and self.is_marker(line_start)):
                    break
                content_indent = sp
                if lead > content_indent:
                    self.fail("a leading empty line of the block scalar is more indented"
                              " than its first line", line_start + content_indent)
            if sp < content_indent or sp <= indent or (sp == 0 and self.is_marker(line_start)):
                break
            lines.append(text[line_start + content_indent:eol])
            line_start = eol + 1
        if line_start < end and text[line_start + sp] == "\t":
            self.fail("tab character used for indentation", line_start + sp)
        trailing = 0
        while lines and lines[-1] is None:
            lines.pop()
            trailing += 1
        if literal:
            value = "\n".join(line or "" for line in lines)
        else:
            value = _fold_block(lines)
        if lines and chomp != "-":
            value += "\n"
        if chomp == "+":
            value += "\n" * trailing
        return value, self.skip(line_start - 1 if line_start < end else end)

    # -- flow nodes (7) ------------------------------------------------------------------

    def flow_content(self, pos, indent, flow):
        """Alias, quoted or plain scalar, or flow collection at pos: (kind, value, end)."""
        text = self.text
        c = text[pos]
        if c == '"':
            scalar, q = self.double_quoted(pos, indent)
            return "quoted", scalar, q
        if c == "'":
            scalar, q = self.single_quoted(pos, indent)
            return "quoted", scalar, q
        if c == "[" or c == "{":
            value, q = self.flow_collection(pos, indent)
            return ("seq" if c == "[" else "map"), value, q
        if c == "*":
            match = _ANCHOR.match(text, pos + 1)
            if match is None:
                self.fail("an alias needs a name after '*'", pos)
            entry = self.anchors.get(match.group())
            if entry is None:
                self.fail("undefined alias %r" % match.group(), pos)
            self.count(entry[1], pos)
            return "alias", entry[0], match.end()
        scalar, q = self.plain(pos, indent, flow)
        return "plain", scalar, q

    def flow_node(self, pos, indent):
        """A node inside a flow collection: (value, end, json_like) (7.1-7.5)."""
        text = self.text
        props, start = _NO_PROPERTIES, pos
        if pos >= self.end:
            self.fail("unterminated flow collection", pos)
        if text[pos] == "!" or text[pos] == "&":
            props, pos = self.properties(pos, True)
            pos = self.flow_ws(pos, indent)
            c = text[pos]
            if c in ",]}" or (c == ":" and text[pos + 1] in _FLOW_END):
                return self.finish("empty", None, props, start), pos, False
        kind, value, q = self.flow_content(pos, indent, True)
        value = self.finish(kind, value, props, start)
        return value, q, kind in ("quoted", "map", "seq")

    def flow_ws(self, pos, indent):
        """Skip separation, line breaks and comments inside a flow collection (6.2-6.7).

        Lines with content must be indented more than the enclosing block (``indent``).
        """
        text = self.text
        while True:
            q = _WS.match(text, pos).end()
            c = text[q]
            if c == "#":
                if q == pos and text[pos - 1] not in " \t\n":
                    return q
                q = text.find("\n", q)
                q = self.end if q < 0 else q
                c = text[q]
            if c != "\n":
                return q
            pos = q + 1
            r = _WS.match(text, pos).end()
            if text[r] not in "\n#\x00":
                if self.is_marker(r):
                    self.fail("document marker inside a flow collection", r)
                if _SPACES.match(text, pos).end() - pos <= indent:
                    self.fail("bad indentation inside a flow collection"
                              " (expected more than %d spaces)" % indent, r)

    def flow_collection(self, pos, indent):
        """'[...]' or '{...}' at pos (7.4, 7.5); returns (list or dict, end)."""
        text = self.text
        start, is_map = pos, text[pos] == "{"
        close = "}" if is_map else "]"
        self.enter(pos)
        result = {} if is_map else []
        written = set()
        pos = self.flow_ws(pos + 1, indent)
        while text[pos] != close:
            if pos >= self.end:
                self.fail("unterminated flow %s" % ("mapping" if is_map else "sequence"), start)
            key_pos = pos
            explicit = text[pos] == "?" and text[pos + 1] in _FLOW_END
            if explicit:
                pos = self.flow_ws(pos + 1, indent)
            c = text[pos]
            if c == "," or c == close or (c == ":" and text[pos + 1] in _FLOW_END):
                if c != ":" and not explicit:
                    self.fail("unexpected %r in a flow collection" % c, pos)
                key, json_like = self.finish("empty", None, _NO_PROPERTIES, pos), False
            else:
                key, pos, json_like = self.flow_node(pos, indent)
                pos = self.flow_ws(pos, indent)
            pair = explicit or is_map
            if text[pos] == ":" and (json_like or text[pos + 1] in _FLOW_END):
                if not pair and text.find("\n", key_pos, pos) >= 0:
                    self.fail("an implicit key in a flow sequence must be on a single line", key_pos)
                pair = True
                pos = self.flow_ws(pos + 1, indent)
                if text[pos] == "," or text[pos] == close:
                    value = self.finish("empty", None, _NO_PROPERTIES, pos)
                else:
                    value, pos, _ = self.flow_node(pos, indent)
                    pos = self.flow_ws(pos, indent)
            else:
                value = None
            if pair and isinstance(key, (dict, list)):
                self.fail("complex mapping keys are not supported", key_pos)
            if is_map:
                self.put(result, written, key, value, key_pos)
            elif pair:
                single = {}
                self.put(single, set(), key, value, key_pos)
                result.append(single)
                self.count(1, key_pos)
            else:
                result.append(key)
            if text[pos] == ",":
                pos = self.flow_ws(pos + 1, indent)
            elif text[pos] != close:
                if pos >= self.end:
                    self.fail("unterminated flow %s" % ("mapping" if is_map else "sequence"),
                              start)
                self.fail("expected ',' or '%s' in a flow collection" % close, pos)
        self.depth -= 1
        return result, pos + 1

    # -- scalars (7.3) -------------------------------------------------------------------

    def plain(self, pos, indent, flow):
        """A plain scalar at pos (7.3.3), folded over lines indented more than ``indent``."""
        text = self.text
        c = text[pos]
        if c in _INDICATORS or c in _WS_EOL:
            nxt = text[pos + 1]
            if not (c in "-?:" and nxt not in _WS_EOL and not (flow and nxt in ",[]{}")):
                self.fail(_unexpected(c, flow), pos)
        rx = _PLAIN_FLOW if flow else _PLAIN_BLOCK
        end = rx.match(text, pos + 1).end()
        chunks = None
        while True:
            q = _WS.match(text, end).end()
            if text[q] != "\n":
                break
            breaks = 0
            while True:
                ls = q + 1
                r = _WS.match(text, ls).end()
                if text[r] != "\n":
                    break
                breaks += 1
                q = r
            c = text[r]
            if (c == "\x00" or c == "#" or _SPACES.match(text, ls).end() - ls <= indent
                    or (r == ls and self.is_marker(r))):
                break
            e = rx.match(text, r).end()
            if e == r:
                break
            if chunks is None:
                chunks = [text[pos:end]]
            chunks.append(" " if breaks == 0 else "\n" * breaks)
            chunks.append(text[r:e])
            end = e
        return (text[pos:end] if chunks is None else "".join(chunks)), end

    def fold(self, pos, indent, start, what):
        """Line breaks inside a quoted scalar (7.3.1, 6.5), pos at the first one.

        Returns (position of the next line's content, number of empty lines).
        """
        text = self.text
        breaks = 0
        while True:
            ls = pos + 1
            r = _WS.match(text, ls).end()
            c = text[r]
            if c == "\n":
                breaks += 1
                pos = r
                continue
            if c == "\x00":
                self.fail("unterminated %s string" % what, start)
            if r == ls and self.is_marker(r):
                self.fail("document marker inside a %s string" % what, r)
            if _SPACES.match(text, ls).end() - ls <= indent:
                self.fail("a continuation line of a %s string must be indented more"
                          " than its parent" % what, r)
            return r, breaks

    def double_quoted(self, pos, indent):
        text = self.text
        start, pos, chunks = pos, pos + 1, []
        while True:
            q = _DQ_RUN.match(text, pos).end()
            c = text[q]
            if c == '"':
                chunks.append(text[pos:q])
                return "".join(chunks), q + 1
            if c == "\\":
                chunks.append(text[pos:q])
                e = text[q + 1]
                if e in _ESCAPES:
                    chunks.append(_ESCAPES[e])
                    pos = q + 2
                elif e in _HEX_SIZE:
                    code, pos = self.hex_escape(q, e)
                    chunks.append(chr(code))
                elif e == "\n":
                    pos, breaks = self.fold(q + 1, indent, start, "double-quoted")
                    chunks.append("\n" * breaks)
                elif e == "\x00":
                    self.fail("unterminated double-quoted string", start)
                else:
                    self.fail("invalid escape sequence %r" % ("\\" + e), q)
            elif c == "\n":
                pos = self.quoted_break(chunks, pos, q, indent, start, "double-quoted")
            else:
                self.fail("unterminated double-quoted string", start)

    def hex_escape(self, pos, letter):
        """\\x, \\u, \\U at pos; a \\u surrogate pair is joined (as in JSON). Returns (code point, end)."""
        text = self.text
        size = _HEX_SIZE[letter]
        digits = text[pos + 2:pos + 2 + size]
        if len(digits) != size or _HEX.match(digits) is None:
            self.fail("invalid escape sequence %r: expected %d hexadecimal digits"
                      % ("\\" + letter, size), pos)
        code, end = int(digits, 16), pos + 2 + size
        if 0xD800 <= code < 0xDC00 and letter == "u" and text.startswith("\\u", end):
            low = text[end + 2:end + 6]
            if len(low) == 4 and _HEX.match(low) and 0xDC00 <= int(low, 16) < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                end += 6
        if 0xD800 <= code < 0xE000 or code > 0x10FFFF:
            self.fail("invalid escape sequence: U+%X is not a character" % code, pos)
        return code, end

    def single_quoted(self, pos, indent):
        text = self.text
        start, pos, chunks = pos, pos + 1, []
        while True:
            q = _SQ_RUN.match(text, pos).end()
            c = text[q]
            if c == "'":
                if text[q + 1] == "'":
                    chunks.append(text[pos:q + 1])
                    pos = q + 2
                    continue
                chunks.append(text[pos:q])
                return "".join(chunks), q + 1
            if c == "\n":
                pos = self.quoted_break(chunks, pos, q, indent, start, "single-quoted")
            else:
                self.fail("unterminated single-quoted string", start)

    def quoted_break(self, chunks, pos, q, indent, start, what):
        """A line break at ``q`` inside a quoted scalar (7.3.1, 7.3.2): the line's trailing white space goes,
        the break folds to a space (or stays, as many as there were empty lines); returns where the next
        line's content starts."""
        chunks.append(self.text[pos:q].rstrip(" \t"))
        pos, breaks = self.fold(q, indent, start, what)
        chunks.append(" " if breaks == 0 else "\n" * breaks)
        return pos

    # -- properties and values (6.9, 10) -------------------------------------------------

    def properties(self, pos, flow):
        """Tag and/or anchor at pos: (:data:`_Properties`, end)."""
        text = self.text
        tag = anchor = None
        tag_pos = 0
        while True:
            if text[pos] == "!":
                if tag is not None:
                    self.fail("a node can have only one tag", pos)
                tag_pos = pos
                tag, pos = self.tag(pos)
            else:
                if anchor is not None:
                    self.fail("a node can have only one anchor", pos)
                match = _ANCHOR.match(text, pos + 1)
                if match is None:
                    self.fail("an anchor needs a name after '&'", pos)
                anchor, pos = match.group(), match.end()
            c = text[pos]
            if c == " " or c == "\t":
                q = _WS.match(text, pos).end()
                if text[q] == "!" or text[q] == "&":
                    pos = q
                    continue
            elif c not in "\n\x00" and not (flow and c in ",[]{}"):
                self.fail("expected whitespace after a tag or anchor", pos)
            return _Properties(tag, tag_pos, anchor, self.nodes), pos

    def tag(self, pos):
        """A tag at pos (6.9.1): its name in _KNOWN_TAGS, or "!" for the non-specific tag."""
        match = _TAG.match(self.text, pos)
        verbatim, handle, suffix = match.groups()
        if verbatim is not None:
            full = _unescape_uri(verbatim)
        elif handle is None and not suffix:
            return "!", match.end()
        else:
            handle = "!" if handle is None else "!" + handle + "!"
            prefix = self.handles.get(handle)
            if prefix is None and handle in ("!", "!!"):
                prefix = "!" if handle == "!" else _YAML_TAG
            if prefix is None:
                self.fail("undefined tag handle %r" % handle, pos)
            if not suffix:
                self.fail("a tag needs a name after %r" % handle, pos)
            full = prefix + _unescape_uri(suffix)
        name = full[len(_YAML_TAG):] if full.startswith(_YAML_TAG) else None
        if self.go:
            return (name if name in _GO_TAGS or name == "merge" else _UNKNOWN), match.end()
        if name not in _KNOWN_TAGS:
            self.fail("unknown tag %r" % match.group(), pos)
        return name, match.end()

    def count(self, nodes, pos):
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            self.fail("more than %d nodes once aliases are expanded" % MAX_NODES, pos)

    def finish(self, kind, value, props, pos):
        """The Python value of a parsed node, its tag applied and its anchor recorded.

        ``props`` are its :data:`_Properties`.
        """
        tag, anchor = props.tag, props.anchor
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
                          % (tag, "mapping" if kind == "map" else "sequence"), props.tag_pos)
        elif tag == "map" or tag == "seq":
            self.fail("tag !!%s cannot be applied to a scalar" % tag, props.tag_pos)
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
            self.anchors[anchor] = (value, self.nodes - props.nodes_before)
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
