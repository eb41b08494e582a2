"""The test API server: label and field selectors, parsed and matched as the API server does."""

import re

from .status import bad_request, go_quote


#
# Label selectors: the lexer and recursive-descent parser of
# ``k8s.io/apimachinery/pkg/labels/selector.go`` with the error texts kube-apiserver
# v1.20 answers (checked against one by tests/test_contract.py); key and value checks of
# ``pkg/util/validation/validation.go`` (IsQualifiedName, IsValidLabelValue). Field
# selectors: ``pkg/fields/selector.go`` (splitTerms, splitTerm, UnescapeValue) and the field
# label check of the resource (core types vs custom resources).

_LS_SPECIAL = "=!(),><"
_LS_WHITESPACE = " \t\r\n"
_LS_TOKENS = {")": "closepar", ",": "comma", "!": "not", "==": "eqeq", "=": "eq", ">": "gt", "in": "in",
              "<": "lt", "!=": "neq", "notin": "notin", "(": "openpar"}
_QNAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                    "'.', and must start and end with an alphanumeric character")


def _regex_error(msg, fmt, *examples):
    """``validation.RegexError`` (its odd ``'x',  or 'y', `` spacing included)."""
    if not examples:
        return "%s (regex used for validation is '%s')" % (msg, fmt)
    return "%s (e.g. %sregex used for validation is '%s')" % (
        msg, " or ".join("'%s', " % e for e in examples), fmt)


def _qualified_name_errors(value):
    """A label key's checks (``validation.IsQualifiedName``) with the texts of kube-apiserver 1.37 (length limits in
    bytes, "a valid label key" where 1.34 says "a qualified name"): a list of error texts (empty when valid)."""
    errs = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS1123_SUBDOMAIN.match(prefix):
                errs.append("prefix part " + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT,
                                                          "example.com"))
    else:
        return ["a valid label key " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _QNAME.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def _label_value_errors(value):
    """``validation.IsValidLabelValue`` (1.37's texts: the length limit in bytes)."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.match(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_int64(text):
    """``strconv.ParseInt(text, 10, 64)``, or None."""
    if not re.match(r"^[+-]?[0-9]+$", text):
        return None
    value = int(text)
    return value if -2 ** 63 <= value < 2 ** 63 else None


class _SelectorError(Exception):
    pass


def _lex_label_selector(text):
    """The token list of ``Lexer.Lex`` until the end of the string: [(kind, literal)]."""
    items, pos, n = [], 0, len(text)
    while True:
        while pos < n and text[pos] in _LS_WHITESPACE:
            pos += 1
        if pos >= n:
            items.append(("end", ""))
            return items
        if text[pos] in _LS_SPECIAL:
            buffer, last = "", None
            while pos < n and text[pos] in _LS_SPECIAL:
                buffer += text[pos]
                if buffer in _LS_TOKENS:
                    last = (_LS_TOKENS[buffer], buffer)
                    pos += 1
                elif last is not None:
                    break
                else:
                    pos += 1
            items.append(last or ("error", "error expected: keyword found '%s'" % buffer))
        else:
            start = pos
            while pos < n and text[pos] not in _LS_SPECIAL and text[pos] not in _LS_WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((_LS_TOKENS.get(word, "id"), word))


class _LabelSelectorParser:
    """``labels.Parser``: ``parse`` returns [(key, op, values)] or raises _SelectorError."""

    def __init__(self, text):
        self.items = _lex_label_selector(text)
        self.position = 0

    def lookahead(self, values_context):
        kind, literal = self.items[self.position]
        if values_context and kind in ("in", "notin"):
            kind = "id"
        return kind, literal

    def consume(self, values_context):
        self.position += 1
        kind, literal = self.items[self.position - 1]
        if values_context and kind in ("in", "notin"):
            kind = "id"
        return kind, literal

    def parse(self):
        requirements = []
        while True:
            kind, literal = self.lookahead(True)
            if kind in ("id", "not"):
                try:
                    requirements.append(self.requirement())
                except _SelectorError as e:
                    raise _SelectorError("unable to parse requirement: %s" % e)
                kind, literal = self.consume(True)
                if kind == "end":
                    return requirements
                if kind == "comma":
                    kind2, literal2 = self.lookahead(True)
                    if kind2 not in ("id", "not"):
                        raise _SelectorError("found '%s', expected: identifier after ','" % literal2)
                else:
                    raise _SelectorError("found '%s', expected: ',' or 'end of string'" % literal)
            elif kind == "end":
                return requirements
            else:
                raise _SelectorError("found '%s', expected: !, identifier, or 'end of string'" % literal)

    def requirement(self):
        key, op = self.key_and_operator()
        if op in ("exists", "!"):
            return self.new_requirement(key, op, ())
        op = self.operator()
        values = self.values() if op in ("in", "notin") else self.exact_value()
        return self.new_requirement(key, op, tuple(sorted(values)))

    def key_and_operator(self):
        op = None
        kind, literal = self.consume(True)
        if kind == "not":
            op = "!"
            kind, literal = self.consume(True)
        if kind != "id":
            raise _SelectorError("found '%s', expected: identifier" % literal)
        self.check_key(literal)
        if self.lookahead(True)[0] in ("end", "comma") and op != "!":
            op = "exists"
        return literal, op

    def operator(self):
        kind, literal = self.consume(False)
        ops = {"in": "in", "eq": "=", "eqeq": "=", "gt": ">", "lt": "<", "notin": "notin", "neq": "!="}
        if kind not in ops:
            raise _SelectorError("found '%s', expected: in, notin, =, ==, !=, gt, lt" % literal)
        return ops[kind]

    def values(self):
        kind, literal = self.consume(True)
        if kind != "openpar":
            raise _SelectorError("found '%s' expected: '('" % literal)
        kind, literal = self.lookahead(True)
        if kind in ("id", "comma"):
            found = self.identifiers()
            if self.consume(True)[0] != "closepar":
                raise _SelectorError("found '%s', expected: ')'" % literal)
            return found
        if kind == "closepar":
            self.consume(True)
            return {""}
        raise _SelectorError("found '%s', expected: ',', ')' or identifier" % literal)

    def identifiers(self):
        found = set()
        while True:
            kind, literal = self.consume(True)
            if kind == "id":
                found.add(literal)
                kind2, literal2 = self.lookahead(True)
                if kind2 == "comma":
                    continue
                if kind2 == "closepar":
                    return found
                raise _SelectorError("found '%s', expected: ',' or ')'" % literal2)
            if kind == "comma":
                if not found:
                    found.add("")
                kind2 = self.lookahead(True)[0]
                if kind2 == "closepar":
                    found.add("")
                    return found
                if kind2 == "comma":
                    self.consume(True)
                    found.add("")
            else:
                raise _SelectorError("found '%s', expected: ',', or identifier" % literal)

    def exact_value(self):
        if self.lookahead(True)[0] in ("end", "comma"):
            return {""}
        kind, literal = self.consume(True)
        if kind == "id":
            return {literal}
        raise _SelectorError("found '%s', expected: identifier" % literal)

    @staticmethod
    def check_key(key):
        errs = _qualified_name_errors(key)
        if errs:
            # validateLabelKey(k, p.path) with the parser's nil path: field.Invalid's "<nil>: Invalid value: ..."
            raise _SelectorError("<nil>: Invalid value: %s: %s" % (go_quote(key), "; ".join(errs)))

    def new_requirement(self, key, op, values):
        """``NewRequirement`` (k8s.io/apimachinery ``pkg/labels/selector.go``): its checks in its order, each a
        field.Error at ``values[i]`` (a label value's at ``values[i][key]``); the first is raised."""
        self.check_key(key)
        if op in ("in", "notin") and not values:
            raise _SelectorError("for 'in', 'notin' operators, values set can't be empty")
        if op in ("=", "!=") and len(values) != 1:
            raise _SelectorError("exact-match compatibility requires one single value")
        if op in (">", "<"):
            if len(values) != 1:
                raise _SelectorError("for 'Gt', 'Lt' operators, exactly one value is required")
            for i, value in enumerate(sorted(values)):
                if _go_int64(value) is None:
                    raise _SelectorError("values[%d]: Invalid value: %s: for 'Gt', 'Lt' operators, the value must "
                                         "be an integer" % (i, go_quote(value)))
        for i, value in enumerate(sorted(values)):
            errs = _label_value_errors(value)
            if errs:
                raise _SelectorError("values[%d][%s]: Invalid value: %s: %s" % (i, key, go_quote(value),
                                                                                "; ".join(errs)))
        return key, op, values


def parse_label_selector(text):
    """Parse a label selector (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``,
    ``k notin (a,b)``, ``k>1``, ``k<1``) into ``[(key, op, values)]`` with op one of ``=``,
    ``!=``, ``in``, ``notin``, ``exists``, ``!``, ``>``, ``<``; raises :class:`APIError` 400
    with kube-apiserver's message (``labels.Parse``)."""
    try:
        return sorted(_LabelSelectorParser(text or "").parse(), key=lambda r: r[0])
    except _SelectorError as e:
        raise bad_request(str(e))


def labels_match(labels, reqs):
    """True if ``labels`` (dict) satisfies every requirement (``Requirement.Matches``):
    ``!=``/``notin`` match an absent key; ``>``/``<`` need an integer label value."""
    for key, op, values in reqs:
        present = key in labels
        if op in ("=", "in") and (not present or labels[key] not in values):
            return False
        if op in ("!=", "notin") and present and labels[key] in values:
            return False
        if op == "exists" and not present:
            return False
        if op == "!" and present:
            return False
        if op in (">", "<"):
            have = _go_int64(labels[key]) if present else None
            want = _go_int64(values[0])
            if have is None or want is None or not (have > want if op == ">" else have < want):
                return False
    return True


def _split_field_terms(text):
    """``fields.splitTerms``: split on commas not escaped by a backslash (kept as they are)."""
    if not text:
        return []
    terms, start, in_slash = [], 0, False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _unescape_field_value(value):
    """``fields.UnescapeValue``."""
    out, in_slash = [], False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise bad_request("invalid field selector: invalid escape sequence: \\" + c)
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise bad_request("invalid field selector: unescaped character in value: %d" % ord(c))
        else:
            out.append(c)
    if in_slash:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text, res=None):
    """Parse a field selector as ``fields.ParseSelector`` does, then check each field label as
    the resource's conversion does (``metadata.name``; ``metadata.namespace`` only where the
    resource is namespaced or built in) -> ``[(field, op, value)]`` with field ``name`` or
    ``namespace`` and op ``=`` or ``!=``; raises :class:`APIError` 400."""
    terms = []
    for part in sorted(_split_field_terms(text or "")):
        if not part:
            continue
        for i in range(len(part)):
            op = next((o for o in ("!=", "==", "=") if part.startswith(o, i)), None)
            if op:
                terms.append((part[:i], "!=" if op == "!=" else "=", _unescape_field_value(part[i + len(op):])))
                break
        else:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (text, part))
    custom = res is not None and not res.typed
    for field, _, _ in terms:
        allowed = ("metadata.name", "metadata.namespace") if not custom or res.namespaced else ("metadata.name",)
        if field not in allowed:
            if custom:
                raise bad_request("field label not supported: %s" % field)
            raise bad_request('%s is not a known field selector: only "metadata.name", "metadata.namespace"'
                              % go_quote(field))
    return [(field.split(".")[1], op, value) for field, op, value in terms]
