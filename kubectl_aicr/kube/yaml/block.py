"""A fast path for the plain block YAML that kubectl, client-go and PyYAML write kubeconfigs in.

:func:`load` reads a strict subset of YAML 1.2 line by line and returns exactly what
:func:`kubectl_aicr.kube.yaml.reader.load` returns for it, or None for anything outside the
subset, and the caller then reads the text with the full reader (which also reports every
error: this module never refuses anything itself). It exists because a 2 MB, 1,000-context
kubeconfig takes the full reader several times longer, and kubectl reads such files in
well under half a second.

The subset: LF line breaks; indentation by spaces; no comments, tabs, directives, document
markers, anchors, aliases, tags, block scalars, flow collections other than ``{}`` and
``[]``, multi-line scalars or complex keys; mapping keys that are plain words
(``certificate-authority-data``, ``client.authentication.k8s.io/exec``); block sequences
(``- item``, ``- key: value``), also at their key's indentation; scalars plain (resolved by
the YAML 1.2 core schema, as the full reader resolves them: null, booleans, decimal
integers; any other number-like plain scalar leaves the subset), single-quoted, or
double-quoted with only JSON's escapes. Duplicate keys leave the subset (so the full reader
reports them). A plain scalar may start with ``-``, ``?`` or ``:`` followed by a non-space (a
token such as ``-Xk2...``), as in the full reader.

Both readers take a ``schema``: ``CORE`` (YAML 1.2, the default) or ``GO_YAML``, the scalar
resolution of go-yaml v2 that kubectl reads kubeconfig with (YAML 1.1: ``yes``/``no``/``on``/
``off``/``y``/``n`` booleans, ``017`` octal, ``1_000``...; see :func:`resolve_go_yaml`). In
``GO_YAML`` a plain scalar resolved to a float, and a key resolved to anything but a string,
leave the subset.
"""

import json
import re

MAX_DEPTH = 40      # well inside the full reader's limits (nesting depth, node count, key length)
MAX_LINES = 300000
MAX_KEY = 1024

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_.\-]+)*\Z")
_NOT_STRING_KEYS = frozenset(["null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"])
_NULLS = {"~": None, "null": None, "Null": None, "NULL": None}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
# Patterns compiled on first use (re caches them): most starts never need them (issue 15: each compile
# at import costs every start 0.1 to 0.4 ms). _KEY is needed by every load, so it is compiled here.
_DECIMAL = r"[-+]?[0-9]+\Z"
# Any other plain scalar the core schema would not read as a string (octal, hex, floats, .inf, .nan).
_OTHER_NUMBER = (r"""(?:0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                               |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z""")
_NUMBER_FIRST = frozenset("0123456789+-.")
_PLAIN_FIRST_BAD = frozenset("-?:,[]{}#&*!|>'\"%@`")
_JSON_ESCAPES = r'\\(?:["\\/bfnrt]|u(?![dD][89abAB])[0-9a-fA-F]{4})'
_ASCII_OK = bytes(range(32, 127)) + b"\n"  # what may stay when the ASCII text's other bytes are deleted
_BAD_CHARS = "[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\ufffe\uffff\ud800-\udfff]"


CORE, GO_YAML = "core", "go-yaml-v2"

# go-yaml v2's resolve.go: the plain scalars looked up in a table (exact spellings only: "oN" is a string).
_GO_TABLE = {"": None, "~": None, "null": None, "Null": None, "NULL": None,
             ".nan": float("nan"), ".NaN": float("nan"), ".NAN": float("nan")}
for _words, _value in (("y Y yes Yes YES true True TRUE on On ON", True),
                       ("n N no No NO false False FALSE off Off OFF", False),
                       (".inf .Inf .INF +.inf +.Inf +.INF", float("inf")), ("-.inf -.Inf -.INF", float("-inf"))):
    for _word in _words.split():
        _GO_TABLE[_word] = _value
_GO_FIRST = frozenset("+-0123456789.yYnNtTfFoO~")  # resolve.go's resolveTable: what may not be a string
# strconv.ParseInt(s, 0, 64) after go-yaml removed every "_": sign, then 0x / 0o / 0b / leading-0 octal / decimal.
_GO_INT = r"([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|0([0-7]*)|([1-9][0-9]*))\Z"
_GO_INT_BASES = (16, 8, 2, 8, 10)
_GO_INT_DIGITS = (16, 22, 64, 22, 20)  # digits of 2**64 - 1 in each base (leading zeros not counted)
_GO_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z"  # yamlStyleFloat
_GO_DOT_FLOAT = r"\.[0-9]+(?:[eE][-+]?[0-9]+)?\Z"  # strconv.ParseFloat of a plain "." scalar


def resolve_go_yaml(text):
    """The value go-yaml v2 (``resolve.go``, as vendored by sigs.k8s.io/yaml) gives the plain scalar ``text``.

    None, a bool, an int (int64 or uint64 range), a float (maybe infinite or NaN) or ``text``
    itself. Timestamps stay strings, as go-yaml v2 leaves them when decoding into interface{}.
    Numbers out of the int64/uint64 range become floats when written in decimal and inside float64's range,
    else strings: a decimal integer of 5,000 digits is a string, as kubectl 1.37 reads it (strconv.ParseInt,
    ParseUint and ParseFloat all fail), never Python's ValueError of a too long integer string.
    """
    if text in _GO_TABLE:
        return _GO_TABLE[text]
    first = text[0]
    if first not in _GO_FIRST or first in "yYnNtTfFoO~":
        return text
    if first == ".":
        if re.match(_GO_DOT_FLOAT, text):
            value = float(text)
            if value != float("inf"):
                return value
        return text
    plain = text.replace("_", "")
    match = re.match(_GO_INT, plain)
    if match is not None:
        index = next(i for i, group in enumerate(match.groups()[1:]) if group is not None)
        digits = match.group(index + 2).lstrip("0")
        if len(digits) <= _GO_INT_DIGITS[index]:  # longer is out of range, and past Python's int-parsing limit
            value = int(digits, _GO_INT_BASES[index]) if digits else 0
            if match.group(1) == "-":
                value = -value
            if -(1 << 63) <= value < (1 << 63) or (not match.group(1) and value < (1 << 64)):
                return value
    if re.match(_GO_FLOAT, plain):
        value = float(plain)
        if value not in (float("inf"), float("-inf")):  # strconv.ParseFloat: out of range is an error
            return value
    return text


class _Outside(Exception):
    """The text leaves the subset: the caller uses the full reader."""


def load(text, schema=CORE):
    """The value of ``text`` if it is in the subset (the same value the full reader gives with the same
    ``schema``, CORE or GO_YAML), else None."""
    if not text or " #" in text or "\n---" in text or "\n..." in text or text.startswith(("---", "%", "#")):
        return None
    if text.isascii():
        if text.encode("ascii").translate(None, _ASCII_OK):
            return None  # a control character or a tab
    elif re.search(_BAD_CHARS, text):
        return None
    indents, contents = [], []
    for line in text.split("\n"):
        content = line.strip(" ")
        if content:
            if content[0] == "#":
                return None
            indents.append(len(line) - len(line.lstrip(" ")))
            contents.append(content)
    if not contents or len(contents) > MAX_LINES or indents[0] != 0:
        return None
    indents.append(-1)  # a sentinel: every loop below stops at it
    contents.append("")
    try:
        value, end = _node(indents, contents, 0, 0, 0, _GO_SCALARS if schema == GO_YAML else _CORE_SCALARS)
    except (_Outside, RecursionError):
        return None
    return value if end == len(contents) - 1 else None


def _is_dash(content):
    return content == "-" or content[:2] == "- "


def _node(indents, contents, index, indent, depth, scalars):
    """Parse the block node whose first line is line ``index`` at ``indent``; (value, next index).

    ``scalars`` is (the key checks, the plain scalar reader) of the schema.
    """
    if depth > MAX_DEPTH:
        raise _Outside()
    if _is_dash(contents[index]):
        return _sequence(indents, contents, index, indent, depth, scalars)
    return _mapping(indents, contents, index, indent, depth, scalars)


_GOOD_KEYS = set()  # keys already checked (a kubeconfig repeats a few dozen keys thousands of times)
_GO_NOT_STRING_KEYS = frozenset(word for word, value in _GO_TABLE.items() if value is not None)


def _entry(content):
    """``key: value`` or ``key:`` -> (key, value text); _Outside otherwise."""
    if content[-1] == ":":
        key, value = content[:-1], ""
    else:
        key, separator, value = content.partition(": ")
        if not separator:
            raise _Outside()
    if key not in _GOOD_KEYS:
        if len(key) > MAX_KEY or not _KEY.match(key) or key in _NOT_STRING_KEYS or key in _GO_NOT_STRING_KEYS:
            raise _Outside()
        if len(_GOOD_KEYS) < 4096:
            _GOOD_KEYS.add(key)
    return key, value.strip(" ")


def _mapping(indents, contents, index, indent, depth, scalars):
    result = {}
    while indents[index] == indent:
        content = contents[index]
        if _is_dash(content):
            raise _Outside()
        key, text = _entry(content)
        if key in result:
            raise _Outside()
        index += 1
        following = indents[index]
        if text:
            if following > indent:
                raise _Outside()  # a multi-line scalar
            result[key] = _scalar(text, scalars)
        elif following > indent:
            result[key], index = _node(indents, contents, index, following, depth + 1, scalars)
        elif following == indent and _is_dash(contents[index]):
            result[key], index = _sequence(indents, contents, index, indent, depth + 1, scalars)
        else:
            result[key] = None
    if indents[index] > indent:
        raise _Outside()
    return result, index


def _sequence(indents, contents, index, indent, depth, scalars):
    result = []
    while indents[index] == indent and _is_dash(contents[index]):
        rest = contents[index][1:]
        item = rest.lstrip(" ")
        if not item:
            index += 1
            if indents[index] > indent:
                value, index = _node(indents, contents, index, indents[index], depth + 1, scalars)
            else:
                value = None
            result.append(value)
            continue
        if _is_dash(item):
            raise _Outside()
        if _is_entry(item):
            inner = indent + 1 + len(rest) - len(item)
            indents[index], contents[index] = inner, item  # the item's first key sits at this column
            value, index = _mapping(indents, contents, index, inner, depth + 1, scalars)
            result.append(value)
            continue
        index += 1
        if indents[index] > indent:
            raise _Outside()
        result.append(_scalar(item, scalars))
    if indents[index] > indent:
        raise _Outside()
    return result, index


def _is_entry(content):
    if content.endswith(":") or ": " in content:
        _entry(content)  # a line that looks like an entry but is not a simple one leaves the subset
        return True
    return False


def _scalar(text, plain):
    first = text[0]
    if first == '"':
        return _double_quoted(text)
    if first == "'":
        if len(text) < 2 or not text.endswith("'") or "'" in text[1:-1].replace("''", ""):
            raise _Outside()
        return text[1:-1].replace("''", "'")
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if ": " in text or text.endswith(":"):
        raise _Outside()
    if first in _PLAIN_FIRST_BAD and not (first in "-?:" and len(text) > 1 and text[1] != " "):
        raise _Outside()
    return plain(text)


def _core_plain(text):
    """A one-line plain scalar by the core schema; _Outside for numbers other than decimal integers."""
    first = text[0]
    if first in _NUMBER_FIRST:
        if re.match(_DECIMAL, text):
            try:
                return int(text)
            except ValueError:  # past Python's int-parsing limit: the full reader says "integer too large"
                raise _Outside() from None
        if re.match(_OTHER_NUMBER, text, re.X):
            raise _Outside()
    elif first in "~nNtTfF":
        if text in _NULLS:
            return None
        if text in _BOOLS:
            return _BOOLS[text]
    return text


def _go_plain(text):
    """A one-line plain scalar as go-yaml v2 resolves it; _Outside for floats (NaN and infinities included)."""
    if text[0] not in _GO_FIRST:
        return text
    value = resolve_go_yaml(text)
    if isinstance(value, float):
        raise _Outside()
    return value


_CORE_SCALARS, _GO_SCALARS = _core_plain, _go_plain


def _double_quoted(text):
    if len(text) < 2 or not text.endswith('"'):
        raise _Outside()
    inner = text[1:-1]
    stripped = re.sub(_JSON_ESCAPES, "", inner)
    if '"' in stripped or "\\" in stripped:
        raise _Outside()
    try:
        return json.loads(text)
    except ValueError:
        raise _Outside() from None
