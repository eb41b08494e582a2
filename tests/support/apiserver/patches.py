"""The test API server: JSON patch (RFC 6902) and merge patch (RFC 7386)."""

import copy
import re


class PatchError(Exception):
    """A JSON patch that does not apply (answered 422 by :func:`patch_failed`)."""


def _pointer_tokens(path):
    # findObject splits on "/" and decodes each token (~1 -> /, ~0 -> ~)
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")]


def _index(key, length, for_add=False):
    """strconv.Atoi of an array index; negative indices count from the end (json-patch v4)."""
    if for_add and key == "-":
        return length
    if not re.match(r"^[+-]?\d+$", key):
        raise PatchError("value was not a proper array index: %r" % key)
    idx, size = int(key), length + (1 if for_add else 0)
    if idx < 0:
        if idx < -size:
            raise PatchError("Unable to access invalid index: %d" % idx)
        idx += size
    if idx >= size:
        raise PatchError("Unable to access invalid index: %d" % idx)
    return idx


def _find_container(doc, path):
    """``findObject``: the container holding the last token, and that token."""
    tokens = _pointer_tokens(path)
    if len(tokens) < 2:
        raise PatchError("doc is missing path: %r" % path)
    node = doc
    for token in tokens[1:-1]:
        node = _get(node, token)
        if not isinstance(node, (dict, list)):
            raise PatchError("doc is missing path: %r" % path)
    return node, tokens[-1]


def _get(container, key):
    # partialDoc.get never fails (a missing key is nil); partialArray.get checks the index
    if isinstance(container, dict):
        return container.get(key)
    return container[_index(key, len(container))]


def _add(container, key, value):
    if isinstance(container, dict):
        container[key] = value
    else:
        container.insert(_index(key, len(container), for_add=True), value)


def _remove(container, key):
    if isinstance(container, dict):
        if key not in container:
            raise PatchError("Unable to remove nonexistent key: %s" % key)
        del container[key]
    else:
        del container[_index(key, len(container))]


def json_equal(a, b):
    """Structural equality of two decoded JSON values (bool is not a number, 1 is not 1.0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def apply_json_patch(doc, operations):
    """Apply an RFC 6902 patch as ``gopkg.in/evanphx/json-patch.v4`` (kube-apiserver's) does.

    ``doc``: decoded JSON object; ``operations``: decoded list of operation objects.
    Returns the patched copy; raises :class:`PatchError`. Quirks kept on purpose: a
    ``test`` whose value is null (or absent) succeeds on an absent key; ``replace`` of an
    absent object key adds it; ``copy`` from an absent object key copies null; negative
    array indices count from the end.
    """
    doc = copy.deepcopy(doc)
    for op in operations:
        op = op if isinstance(op, dict) else {}
        kind = op.get("op") if isinstance(op.get("op"), str) else "unknown"
        path = op.get("path")
        if kind not in ("add", "remove", "replace", "move", "copy", "test"):
            raise PatchError("Unexpected kind: %s" % kind)
        if not isinstance(path, str):
            raise PatchError("operation missing path field")
        value = op.get("value")
        if kind == "test" and path == "":
            if not json_equal(doc, value):
                raise PatchError("testing value %s failed" % path)
            continue
        if kind == "replace" and path == "":
            if not isinstance(value, (dict, list)):
                raise PatchError("replace operation value must be object or array")
            doc = copy.deepcopy(value)
            continue
        if kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise PatchError("operation, missing from field")
            container, key = _find_container(doc, source)
            moved = _get(container, key)
            if kind == "move":
                _remove(container, key)
            else:
                moved = copy.deepcopy(moved)
            container, key = _find_container(doc, path)
            _add(container, key, moved)
            continue
        container, key = _find_container(doc, path)
        if kind == "add":
            _add(container, key, copy.deepcopy(value))
        elif kind == "remove":
            _remove(container, key)
        elif kind == "replace":
            if isinstance(container, dict):
                container[key] = copy.deepcopy(value)
            else:
                container[_index(key, len(container))] = copy.deepcopy(value)
        else:  # test
            current = _get(container, key)
            if current is None:
                if value is not None:
                    raise PatchError("testing value %s failed" % path)
            elif "value" not in op or not json_equal(current, value):
                raise PatchError("testing value %s failed" % path)
    return doc


def _prune_nulls(value):
    # json-patch v4 merge.go pruneNulls: drop null members of objects, recursively
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) if v is not None else None for v in value]
    return value


def apply_merge_patch(target, patch):
    """RFC 7386 merge patch as json-patch v4 ``MergePatch`` applies it: null removes a
    member, objects merge, anything else (arrays included) replaces. Returns a new value."""
    if not isinstance(target, dict):
        return _prune_nulls(copy.deepcopy(patch))
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif result.get(key) is None:
            result[key] = _prune_nulls(copy.deepcopy(value))
        else:
            result[key] = apply_merge_patch(result[key], value)
    return result
