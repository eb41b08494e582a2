"""The YAML reader against the YAML test suite data (``../shared/yaml-test-suite`` beside the checkout).

Each case folder (some have numbered subfolders) holds ``in.yaml`` and either ``in.json``
(the expected documents, several JSON texts one after the other for a stream) or a file
named ``error`` (the YAML must be refused). The rule, for every case:

- an ``error`` case is refused with a YAMLError (no exceptions are listed in
  ``ACCEPTED_ERRORS``: every error case is refused);
- an ``in.json`` case gives exactly the expected documents, or is refused with a
  YAMLError (the reader refuses some valid YAML on purpose: custom tags, complex keys);
- a case with neither (keys JSON cannot write, for instance) just must not crash;
- no case ever raises anything but a YAMLError, nor an "internal error" YAMLError.

``test_summary`` prints how many cases parse right and how many are refused (run pytest
with ``-s`` to also see which valid cases are refused, and why).
"""

import base64
import json
import math
import os

import pytest

from kubectl_aicr.errors import YAMLError
from kubectl_aicr.kube.yaml.reader import load_all

SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                     "yaml-test-suite")

# Error cases the reader accepts, with the reason: none.
ACCEPTED_ERRORS = {}

# At least this share of the cases that have an in.json must parse to the right value.
MIN_PARSED_SHARE = 0.80


def _cases():
    if not os.path.isdir(SUITE):
        return []
    found = []
    for name in sorted(os.listdir(SUITE)):
        folder = os.path.join(SUITE, name)
        if os.path.isfile(os.path.join(folder, "in.yaml")):
            found.append((name, folder))
        elif os.path.isdir(folder):
            for sub in sorted(os.listdir(folder)):
                if os.path.isfile(os.path.join(folder, sub, "in.yaml")):
                    found.append((name + "/" + sub, os.path.join(folder, sub)))
    return found


CASES = _cases()


def test_the_suite_is_there():
    """A missing suite is a failure, never a skip: without it nothing below would run."""
    assert len(CASES) > 300, ("no YAML test suite at %s: lay out ../shared/yaml-test-suite beside the checkout, "
                              "as CI does" % os.path.normpath(SUITE))


def _read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def _json_documents(text):
    decoder, docs, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i >= len(text):
            return docs
        value, i = decoder.raw_decode(text, i)
        docs.append(value)


def _same(got, expected):
    """Equal as values, telling bool from int from float; bytes match their base64 text."""
    if isinstance(got, bytes):
        return isinstance(expected, str) and base64.b64encode(got).decode() == "".join(
            expected.split())
    if isinstance(got, float) and math.isnan(got):
        return isinstance(expected, float) and math.isnan(expected)
    if type(got) is not type(expected):
        return False
    if isinstance(got, dict):   # JSON objects are unordered
        return set(got) == set(expected) and all(_same(got[k], expected[k]) for k in got)
    if isinstance(got, list):
        return len(got) == len(expected) and all(_same(a, b) for a, b in zip(got, expected))
    return got == expected


_OUTCOMES = {}


def _outcome(name, folder):
    """('parsed' | 'refused' | 'no-json', detail); AssertionError if the rule is broken."""
    if name in _OUTCOMES:
        return _OUTCOMES[name]
    text = _read(os.path.join(folder, "in.yaml"))
    is_error = os.path.exists(os.path.join(folder, "error"))
    json_path = os.path.join(folder, "in.json")
    try:
        docs = load_all(text)
    except YAMLError as exc:
        assert "internal error" not in exc.problem, "%s: %s" % (name, exc)
        result = ("refused", str(exc))
    else:
        if is_error:
            assert name in ACCEPTED_ERRORS, "%s: an error case was accepted: %r" % (name, docs)
            result = ("accepted-error", ACCEPTED_ERRORS[name])
        elif os.path.exists(json_path):
            expected = _json_documents(_read(json_path))
            assert len(docs) == len(expected) and all(
                _same(a, b) for a, b in zip(docs, expected)), (
                "%s: read %r, expected %r" % (name, docs, expected))
            result = ("parsed", "")
        else:
            result = ("no-json", "")
    _OUTCOMES[name] = result
    return result


@pytest.mark.parametrize("name,folder", CASES, ids=[c[0] for c in CASES])
def test_case(name, folder):
    _outcome(name, folder)


def test_summary(capsys):
    counts = {"json": 0, "parsed": 0, "json-refused": 0, "errors": 0, "errors-refused": 0,
              "other": 0}
    refused_valid = []
    for name, folder in CASES:
        kind, detail = _outcome(name, folder)
        if os.path.exists(os.path.join(folder, "error")):
            counts["errors"] += 1
            counts["errors-refused"] += kind == "refused"
        elif os.path.exists(os.path.join(folder, "in.json")):
            counts["json"] += 1
            counts["parsed"] += kind == "parsed"
            if kind == "refused":
                counts["json-refused"] += 1
                refused_valid.append("%s: %s" % (name, detail))
        else:
            counts["other"] += 1
    line = ("yaml-test-suite: %d cases; with in.json: %d parsed right, %d refused, of %d;"
            " error cases: %d refused of %d; %d other cases read without a crash"
            % (len(CASES), counts["parsed"], counts["json-refused"], counts["json"],
               counts["errors-refused"], counts["errors"], counts["other"]))
    with capsys.disabled():
        print("\n" + line)
    print("valid cases refused:\n  " + "\n  ".join(refused_valid))
    assert counts["errors-refused"] + len(ACCEPTED_ERRORS) == counts["errors"]
    assert counts["parsed"] >= MIN_PARSED_SHARE * counts["json"], line
