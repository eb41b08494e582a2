"""The YAML reader against PyYAML (test-only), on kubeconfig-shaped values.

Hypothesis builds values shaped like kubeconfigs (clusters, contexts and users lists of
dicts, exec plugins with args and env, extensions of any shape) from strings over a wide
alphabet, dumps them with PyYAML in every style it emits, and checks that
``yamlreader.load`` reads the same value as ``yaml.safe_load``.

PyYAML speaks YAML 1.1, we speak 1.2 (core schema). Where the two resolve a plain scalar
differently, PyYAML's dumper protects only what 1.1 would misread: it quotes ``yes``,
``on``, ``012``, ``1_000``... (strings for both readers then), but writes ``1e3``,
``0o17`` or ``+.5e3`` plain, which 1.1 reads as strings and 1.2 as numbers. Such
strings, and only those, are left out of the generated values (``_differs_in_1_2``).
Characters that YAML 1.1 takes for line breaks (U+0085, U+2028, U+2029) are left out
too: PyYAML writes them raw, followed by indentation, in plain, single-quoted and block
scalars; 1.2 keeps them and that indentation as content (PyYAML reads 'a\x85  b' as
'a b', we read it as written).
"""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_aicr.kube.yaml import reader as yamlreader

yaml = pytest.importorskip("yaml")

_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


def _differs_in_1_2(text):
    """True if PyYAML may write ``text`` plain and 1.2 would read it as a non-string."""
    mine = yamlreader._resolve(text)
    theirs = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
    return not isinstance(mine, str) and mine is not None and theirs == _STR_TAG


_TRICKY = [
    "", " ", "  ", "#", " #", "a#b", ": ", ":", "a: b", "- ", "-", "? ", "?", "'", '"', "''",
    "\\", "\n", "\n\n", "\t", "\r", "\r\n", " \n ", "---", "...", "--- a", "%YAML", "@", "`",
    "&a", "*a", "!tag", "!!str", "|", ">", "{", "}", "[", "]", "{}", "[]", ",", "<<", "=",
    "yes", "no", "on", "off", "y", "n", "Yes", "NO", "true", "True", "FALSE", "null", "Null",
    "~", "0", "1", "-1", "+1", "012", "0x1F", "0o17", "0b101", "1_000", "1.5", "-2.5e-3",
    ".5", "1.", ".inf", "-.Inf", ".NaN", "1:20", "2001-12-14", "https://10.0.0.1:6443",
    "client.authentication.k8s.io/v1beta1", "\u00e9", "\u00a0", "\ufeff", "\u4e2d\u6587",
    "\U0001f600", "\x07", "\x1b", "\x7f", "\x9f", "\ud7ff", "\ue000", "\ufffd",
]
_EXCLUDED_CHARS = "\x85\u2028\u2029"


def _clean(text):
    return "".join(c for c in text if c not in _EXCLUDED_CHARS)


_text = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=16),
    st.lists(st.sampled_from(_TRICKY), max_size=4).map("".join),
    st.sampled_from(_TRICKY),
).map(_clean).filter(lambda t: not _differs_in_1_2(t))
_scalar = st.one_of(_text, st.booleans(), st.integers(), st.none())
_any = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)), max_leaves=6)

_cluster = st.fixed_dictionaries(
    {"server": _text},
    optional={"certificate-authority-data": _text, "insecure-skip-tls-verify": st.booleans(),
              "proxy-url": _text, "tls-server-name": _text})
_exec = st.fixed_dictionaries(
    {"apiVersion": _text, "command": _text},
    optional={"args": st.one_of(st.none(), st.lists(_text, max_size=4)),
              "env": st.one_of(st.none(), st.lists(
                  st.fixed_dictionaries({"name": _text, "value": _text}), max_size=2)),
              "interactiveMode": _text, "provideClusterInfo": st.booleans()})
_user = st.fixed_dictionaries(
    {}, optional={"token": _text, "client-certificate-data": _text, "client-key-data": _text,
                  "username": _text, "password": _text, "exec": _exec,
                  "auth-provider": st.fixed_dictionaries({"name": _text, "config": st.dictionaries(
                      _text, _text, max_size=2)})})
_context = st.fixed_dictionaries({"cluster": _text, "user": _text}, optional={"namespace": _text})
_kubeconfig = st.fixed_dictionaries({
    "apiVersion": st.just("v1"),
    "kind": st.just("Config"),
    "clusters": st.lists(st.fixed_dictionaries({"name": _text, "cluster": _cluster}), max_size=2),
    "contexts": st.lists(st.fixed_dictionaries({"name": _text, "context": _context}), max_size=2),
    "users": st.lists(st.fixed_dictionaries({"name": _text, "user": _user}), max_size=2),
    "current-context": _text,
}, optional={"preferences": st.dictionaries(_text, _any, max_size=2), "extensions": st.lists(
    st.fixed_dictionaries({"name": _text, "extension": _any}), max_size=2)})

_dump_options = st.fixed_dictionaries({
    "default_flow_style": st.sampled_from([False, True, None]),
    "default_style": st.sampled_from([None, '"', "'", "|", ">"]),
    "allow_unicode": st.booleans(),
    "width": st.sampled_from([20, 40, 80, 10000]),
    "indent": st.sampled_from([2, 4, 8]),
    "explicit_start": st.booleans(),
    "canonical": st.sampled_from([False, False, False, True]),
})


def _same(a, b):
    """Equality that tells bool from int and int from float (and NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@settings(max_examples=300, deadline=None, derandomize=False, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(value=_kubeconfig, options=_dump_options)
def test_reads_what_pyyaml_reads(value, options):
    dumped = yaml.safe_dump(value, sort_keys=False, **options)
    expected = yaml.safe_load(dumped)
    got = yamlreader.load(dumped)
    assert _same(got, expected), dumped


@settings(max_examples=100, deadline=None, derandomize=False, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(value=st.lists(_any, min_size=1, max_size=2), options=_dump_options)
def test_reads_pyyaml_streams(value, options):
    dumped = yaml.safe_dump_all(value, sort_keys=False, **options)
    expected = list(yaml.safe_load_all(dumped))
    got = yamlreader.load_all(dumped)
    assert _same(got, expected), dumped


@settings(max_examples=100, deadline=None, derandomize=False, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(value=_kubeconfig, indent=st.sampled_from([None, 1, 2, 4, "\t"]))
def test_reads_json(value, indent):
    import json
    dumped = json.dumps(value, indent=indent, ensure_ascii=indent != 2)
    assert _same(yamlreader.load(dumped), json.loads(dumped)), dumped
