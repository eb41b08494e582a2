"""The test API server: the object store: resourceVersions, conflicts."""

import copy
import threading
import uuid

from .fixtures import format_time
from .resources import resource_for


class Store:
    """The objects, keyed by (plural, namespace, name), and a global resourceVersion counter.

    ``lock`` (re-entrant) serialises every read-modify-write; each write bumps the counter
    and stamps the object with it, as etcd's revision does.
    """

    def __init__(self, first_rv=1000):
        self.lock = threading.RLock()
        self.rv = first_rv
        self.objects = {}

    def put(self, obj, now):
        """Store a copy of ``obj``, filling uid, creationTimestamp (and generation for CRs);
        returns a copy with the new resourceVersion."""
        obj = copy.deepcopy(obj)
        res = resource_for(obj.get("kind", ""))
        obj["apiVersion"] = obj.get("apiVersion") or res.api_version
        meta = obj.setdefault("metadata", {})
        name, namespace = meta.get("name", ""), meta.get("namespace", "") if res.namespaced else ""
        if not name or (res.namespaced and not namespace):
            raise ValueError("object %s needs metadata.name%s" % (res.kind, " and namespace" if res.namespaced else ""))
        if not res.namespaced:
            meta.pop("namespace", None)
        meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s/%s" % (res.plural, namespace, name))))
        meta.setdefault("creationTimestamp", format_time(now))
        if not res.typed:
            meta.setdefault("generation", 1)
        with self.lock:
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            self.objects[(res.plural, namespace, name)] = obj
            return copy.deepcopy(obj)

    def get(self, plural, namespace, name):
        with self.lock:
            obj = self.objects.get((plural, namespace or "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def delete(self, plural, namespace, name):
        with self.lock:
            return self.objects.pop((plural, namespace or "", name), None) is not None

    def list(self, plural, namespace=None):
        """Copies of the objects of one resource, in key order (namespace, name), and the
        current resourceVersion."""
        with self.lock:
            items = [copy.deepcopy(o) for (p, ns, _), o in sorted(self.objects.items())
                     if p == plural and (namespace is None or ns == namespace)]
            return items, str(self.rv)
