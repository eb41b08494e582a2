"""A fast path for the plain block YAML that kubectl, client-go and PyYAML write kubeconfigs in.

:func:`load` reads a strict subset of YAML 1.2 line by line and returns exactly what
:func:`kubectl_aicr.yamlreader.load` returns for it, or None for anything outside the
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
reports them).
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
_DECIMAL = re.compile(r"[-+]?[0-9]+\Z")
# Any other plain scalar the core schema would not read as a string (octal, hex, floats, .inf, .nan).
_OTHER_NUMBER = re.compile(r"""(?:0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                               |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z""", re.X)
_NUMBER_FIRST = frozenset("0123456789+.")
_PLAIN_FIRST_BAD = frozenset("-?:,[]{}#&*!|>'\"%@`")
_JSON_ESCAPES = re.compile(r'\\(?:["\\/bfnrt]|u(?![dD][89abAB])[0-9a-fA-F]{4})')
_ASCII_OK = bytes(range(32, 127)) + b"\n"  # what may stay when the ASCII text's other bytes are deleted
_BAD_CHARS = re.compile("[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\ufffe\uffff\ud800-\udfff]")


class _Outside(Exception):
    """The text leaves the subset: the caller uses the full reader."""


def load(text):
    """The value of ``text`` if it is in the subset (the same value the full reader gives), else None."""
    if not text or " #" in text or "\n---" in text or "\n..." in text or text.startswith(("---", "%", "#")):
        return None
    if text.isascii():
        if text.encode("ascii").translate(None, _ASCII_OK):
            return None  # a control character or a tab
    elif _BAD_CHARS.search(text):
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
        value, end = _node(indents, contents, 0, 0, 0)
    except (_Outside, RecursionError):
        return None
    return value if end == len(contents) - 1 else None


def _is_dash(content):
    return content == "-" or content[:2] == "- "


def _node(indents, contents, index, indent, depth):
    """Parse the block node whose first line is line ``index`` at ``indent``; (value, next index)."""
    if depth > MAX_DEPTH:
        raise _Outside()
    if _is_dash(contents[index]):
        return _sequence(indents, contents, index, indent, depth)
    return _mapping(indents, contents, index, indent, depth)


_GOOD_KEYS = set()  # keys already checked (a kubeconfig repeats a few dozen keys thousands of times)


def _entry(content):
    """``key: value`` or ``key:`` -> (key, value text); _Outside otherwise."""
    if content[-1] == ":":
        key, value = content[:-1], ""
    else:
        key, separator, value = content.partition(": ")
        if not separator:
            raise _Outside()
    if key not in _GOOD_KEYS:
        if len(key) > MAX_KEY or not _KEY.match(key) or key in _NOT_STRING_KEYS:
            raise _Outside()
        if len(_GOOD_KEYS) < 4096:
            _GOOD_KEYS.add(key)
    return key, value.strip(" ")


def _mapping(indents, contents, index, indent, depth):
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
            result[key] = _scalar(text)
        elif following > indent:
            result[key], index = _node(indents, contents, index, following, depth + 1)
        elif following == indent and _is_dash(contents[index]):
            result[key], index = _sequence(indents, contents, index, indent, depth + 1)
        else:
            result[key] = None
    if indents[index] > indent:
        raise _Outside()
    return result, index


def _sequence(indents, contents, index, indent, depth):
    result = []
    while indents[index] == indent and _is_dash(contents[index]):
        rest = contents[index][1:]
        item = rest.lstrip(" ")
        if not item:
            index += 1
            if indents[index] > indent:
                value, index = _node(indents, contents, index, indents[index], depth + 1)
            else:
                value = None
            result.append(value)
            continue
        if _is_dash(item):
            raise _Outside()
        if _is_entry(item):
            inner = indent + 1 + len(rest) - len(item)
            indents[index], contents[index] = inner, item  # the item's first key sits at this column
            value, index = _mapping(indents, contents, index, inner, depth + 1)
            result.append(value)
            continue
        index += 1
        if indents[index] > indent:
            raise _Outside()
        result.append(_scalar(item))
    if indents[index] > indent:
        raise _Outside()
    return result, index


def _is_entry(content):
    if content.endswith(":") or ": " in content:
        _entry(content)  # a line that looks like an entry but is not a simple one leaves the subset
        return True
    return False


def _scalar(text):
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
    if first in _PLAIN_FIRST_BAD or ": " in text or text.endswith(":"):
        raise _Outside()
    if first in _NUMBER_FIRST:
        if _DECIMAL.match(text):
            return int(text)
        if _OTHER_NUMBER.match(text):
            raise _Outside()
    elif first in "~nNtTfF":
        if text in _NULLS:
            return None
        if text in _BOOLS:
            return _BOOLS[text]
    return text


def _double_quoted(text):
    if len(text) < 2 or not text.endswith('"'):
        raise _Outside()
    inner = text[1:-1]
    stripped = _JSON_ESCAPES.sub("", inner)
    if '"' in stripped or "\\" in stripped:
        raise _Outside()
    try:
        return json.loads(text)
    except ValueError:
        raise _Outside() from None
