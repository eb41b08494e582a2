"""The objects of tests/fixtures as plain dicts, for in-process tests: loaded at one fixed time (:data:`NOW`),
so the times their ``@now+4h`` placeholders give, and what is said of them, are exact; and edits by
dotted path (:func:`set_path`)."""

import copy
import datetime

from tests.support.apiserver import FIXTURE_ANNOTATION, load_fixtures
from tests.support.plugin import FIXTURES

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc)
_LOADED = []


def _objects():
    if not _LOADED:
        _LOADED.extend(load_fixtures(FIXTURES, now=NOW))
    return _LOADED


def fixture(role):
    """A fresh copy of the object whose ``test.aicr.run/fixture`` annotation is ``role`` (KeyError if none)."""
    for obj in _objects():
        if obj["metadata"].get("annotations", {}).get(FIXTURE_ANNOTATION) == role:
            return copy.deepcopy(obj)
    raise KeyError(role)


def configmap(namespace, name):
    """A fresh copy of the fixture ConfigMap ``namespace/name``, or None when the fixtures have none."""
    for obj in _objects():
        meta = obj["metadata"]
        if obj.get("kind") == "ConfigMap" and (meta.get("namespace"), meta["name"]) == (namespace, name):
            return copy.deepcopy(obj)
    return None


def set_path(obj, path, value):
    """Set ``obj``'s member at the dotted ``path`` (``spec.approval.user``) to ``value``, making (or replacing
    with) mappings on the way."""
    keys = path.split(".")
    for key in keys[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[keys[-1]] = value
