"""Records: a class declared with annotations only, at no start-up cost.

A leaf (it imports nothing). Declare a record as a class body of annotated fields; a field with a
value has that default, and fields with defaults come after those without::

    from __future__ import annotations   # annotations stay strings, never evaluated

    class Cluster(Record):
        name: str
        certificate_authority: Optional[str] = None

gives what the package uses of ``typing.NamedTuple``, and no more:

- ``Cluster("c")``, ``Cluster(name="c", certificate_authority="/ca.crt")``: arguments by position or
  keyword; TypeError for a missing, unknown or repeated one.
- ``==`` / ``!=``: the same class with equal fields; ``hash()`` when the values are hashable.
- ``_replace(**changes)``: a copy with some fields changed; ``_fields``: the field names in order.
- ``repr``: ``Cluster(name='c', ...)``; a field named in the class's ``_secret`` shows ``<redacted>``
  when it is set, so a token, password or key never reaches a log or a traceback through a repr.
- Immutable: assigning a field raises AttributeError; ``copy`` and ``pickle`` work. Methods and
  properties may be declared too.

Not a tuple: no indexing, unpacking, iteration or ordering (nothing in the package uses them). A
record does not inherit fields from another record. The annotations are documentation only, never
evaluated or checked: ``from __future__ import annotations`` keeps them as strings, so ``Optional[str]``,
``Union[str, Invalid, None]`` or ``List[Step]`` need no ``typing`` import. They are spelled as
``typing`` spells them for Python 3.8 (not ``str | None`` or ``list[...]``): with typing's names in
scope they would evaluate there too (``tests/test_shipping.py`` checks with vermin's ``--eval-annotations``).

Why not ``typing.NamedTuple`` (measured, CPython 3.11): importing ``typing`` costs ~4 ms and each
NamedTuple class ~0.15 ms more (it builds ``__new__`` with ``eval``), paid at every start of the plugin;
``dataclasses`` imports ``inspect`` and costs more still. Creating a record class here costs a few
microseconds; instances use ``__slots__``.
"""

_MISSING = object()
_set = object.__setattr__


class _RecordType(type):
    """Reads the annotated fields of a record's class body: their order, their defaults, slots for them."""

    def __new__(mcs, name, bases, namespace):
        fields = tuple(namespace.get("__annotations__", ()))
        if bases and not fields:  # e.g. annotations made lazy (Python 3.14 without the __future__ import)
            raise TypeError("record %s declares no annotated fields" % name)
        defaults = {}
        for field in fields:
            if field in namespace:
                defaults[field] = namespace.pop(field)  # a class attribute would clash with the field's slot
            elif defaults:
                raise TypeError("%s: field %s without a default follows a field with one" % (name, field))
        namespace.update(__slots__=fields, _fields=fields, _defaults=defaults)
        return super().__new__(mcs, name, bases, namespace)


class Record(metaclass=_RecordType):
    """The base of every record (see the module's docstring)."""

    _secret = ()  # names of fields whose values repr never shows

    def __init__(self, *args, **kwargs):
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError("%s takes %d arguments, not %d" % (type(self).__name__, len(fields), len(args)))
        for field, value in zip(fields, args):
            _set(self, field, value)
        defaults = self._defaults
        for field in fields[len(args):]:
            value = kwargs.pop(field, _MISSING)
            if value is _MISSING:
                value = defaults.get(field, _MISSING)
                if value is _MISSING:
                    raise TypeError("%s: missing argument %s" % (type(self).__name__, field))
            _set(self, field, value)
        if kwargs:
            raise TypeError("%s: unknown or repeated argument %s" % (type(self).__name__, ", ".join(kwargs)))

    def _values(self):
        return tuple(getattr(self, field) for field in self._fields)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self):
        return hash((type(self), self._values()))

    def __reduce__(self):  # copy and pickle: rebuilt through __init__, as fields cannot be assigned
        return type(self), self._values()

    def __setattr__(self, name, value):
        raise AttributeError("%s is a record: use _replace(%s=...) for a changed copy" % (type(self).__name__, name))

    def __delattr__(self, name):
        raise AttributeError("%s is a record: its fields cannot be deleted" % type(self).__name__)

    def _replace(self, **changes):
        """A copy with the fields named in ``changes`` set to their values."""
        values = {field: getattr(self, field) for field in self._fields}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError("%s has no field %s" % (type(self).__name__, ", ".join(sorted(unknown))))
        values.update(changes)
        return type(self)(**values)

    def __repr__(self):
        shown = []
        for field in self._fields:
            value = getattr(self, field)
            shown.append("%s=%s" % (field, "<redacted>" if value and field in self._secret else repr(value)))
        return "%s(%s)" % (type(self).__name__, ", ".join(shown))
