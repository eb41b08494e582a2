"""Scalars and tags resolved as a schema says: YAML 1.2's core schema (10.3.2), or go-yaml v2's, which
kubectl reads kubeconfig and exec plugin output with (``resolve.go``, ``decode.go``). Used by
:mod:`kubectl_aicr.kube.yaml.reader`."""

import base64
import binascii
import math
import re
import struct
from datetime import datetime

from .block import resolve_go_yaml

# The core schema (10.3.2).
_CORE = re.compile(r"""(?P<null>~|null|Null|NULL)
    | (?P<true>true|True|TRUE) | (?P<false>false|False|FALSE)
    | (?P<int>[-+]?[0-9]+) | 0o(?P<oct>[0-7]+) | 0x(?P<hex>[0-9a-fA-F]+)
    | (?P<float>[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)
    | (?P<inf>[-+]?\.(?:inf|Inf|INF)) | (?P<nan>\.(?:nan|NaN|NAN))""", re.X)
_CORE_FIRST = frozenset("~nNtTfF0123456789+-.")
_YAML_TAG = "tag:yaml.org,2002:"
_KNOWN_TAGS = frozenset(["str", "int", "bool", "null", "float", "map", "seq", "binary"])
_GO_TAGS = frozenset(["str", "int", "bool", "null", "float", "binary", "timestamp"])  # decode.go / resolve.go
_UNKNOWN = "?"  # GO_YAML: any other tag; go-yaml v2 reads such a scalar as a string, a collection as it is
# go-yaml v2's timestamp layouts (resolve.go allowedTimestampFormats), as time.Parse reads them.
_GO_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:([Tt ])([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})"
                           r"(?:\.[0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2})?)?\Z")


def _resolve(text):
    """Value of a plain scalar by the core schema; ValueError for a too long integer."""
    if not text:
        return None
    if text[0] not in _CORE_FIRST:
        return text
    m = _CORE.fullmatch(text)
    if m is None:
        return text
    kind = m.lastgroup
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "null":
        return None
    if kind == "true" or kind == "false":
        return kind == "true"
    if kind == "oct":
        return int(m.group(kind), 8)
    if kind == "hex":
        return int(m.group(kind), 16)
    if kind == "inf":
        return float("-inf") if text[0] == "-" else float("inf")
    return float("nan")


def _construct(tag, text):
    """Value of scalar ``text`` under tag ``tag`` (a name of _KNOWN_TAGS); None if invalid."""
    if tag == "str":
        return text
    if tag == "binary":
        data = "".join(text.split())
        if re.match(r"[A-Za-z0-9+/]*={0,2}\Z", data) is None or len(data) % 4:
            return None
        try:
            return binascii.a2b_base64(data)
        except binascii.Error:
            return None
    value = _resolve(text)
    return _of_kind(tag, value)


def _go_construct(tag, text):
    """GO_YAML: the value of scalar ``text`` under tag ``tag`` (a name of _GO_TAGS); None if invalid.

    go-yaml v2 ``resolve(tag, in)``: the scalar resolves as a plain one would, and must come
    out as the tag's kind (an int is also a float). ``!!binary`` is base64 as Go's
    StdEncoding reads it (line breaks skipped, nothing else) and gives the decoded bytes as
    a string (each byte that is not UTF-8 becomes U+FFFD, as encoding/json writes it).
    """
    if tag == "binary":
        data = text.replace("\r", "").replace("\n", "")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
        return (re.sub("[\udc80-\udcff]", "\ufffd", raw.decode("utf-8", "surrogateescape")),)
    if tag == "timestamp":
        return (text,) if _go_timestamp(text) else None
    value = resolve_go_yaml(text)
    return _of_kind(tag, value)


def _of_kind(tag, value):
    """``(value,)`` if a resolved scalar fits tag null, bool, int or float (an int is made a float), else None."""
    if tag == "null":
        ok = value is None
    elif tag == "bool":
        ok = isinstance(value, bool)
    elif tag == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    return (value,) if ok else None


def _go_timestamp(text):
    """True if go-yaml v2 reads ``text`` as a timestamp (a real date, and a real time when given)."""
    match = _GO_TIMESTAMP.match(text)
    if match is None:
        return False
    year, month, day, sep, hour, minute, second, zone = match.groups()
    if sep == " " and zone is not None or sep in ("T", "t") and zone is None:
        return False
    try:
        datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError:
        return False
    return zone is None or zone == "Z" or (int(zone[1:3]) < 24 and int(zone[4:]) < 60)


def _go_key(key):
    """GO_YAML: a mapping key as sigs.k8s.io/yaml makes it a JSON key (a string); None for a null key."""
    if isinstance(key, str) or key is None:
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if math.isnan(key):
        return ".nan"
    if math.isinf(key):
        return ".inf" if key > 0 else "-.inf"
    return _go_float32_text(key)


def _go_float32_text(value):
    """Go's strconv.FormatFloat(value, 'g', -1, 32): the shortest digits that give the same float32."""
    single = struct.unpack("f", struct.pack("f", value))[0]
    for places in range(9):
        text = "%.*e" % (places, single)
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent = text.split("e")
    digits, exponent = mantissa.replace(".", "").lstrip("-"), int(exponent)
    sign = "-" if mantissa.startswith("-") else ""
    if exponent < -4 or exponent >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return "%s%se%s%02d" % (sign, body, "-" if exponent < 0 else "+", abs(exponent))
    if exponent < 0:
        return sign + "0." + "0" * (-exponent - 1) + digits
    if len(digits) <= exponent + 1:
        return sign + digits + "0" * (exponent + 1 - len(digits))
    return sign + digits[:exponent + 1] + "." + digits[exponent + 1:]
