"""The test API server: the fixture YAML: loading and placeholders (now, digests, files)."""

import datetime
import hashlib
import os
import re

import yaml


class _FixtureLoader(yaml.SafeLoader):
    """PyYAML's safe loader without the timestamp resolver: times stay strings."""


_FixtureLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def format_time(dt):
    """RFC 3339, UTC, seconds precision: ``2026-11-30T12:00:00Z``."""
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now():
    """The current time in UTC, truncated to seconds."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def sha256_digest(data):
    """``sha256:<64 lowercase hex>`` of bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


_NOW = re.compile(r"^now(?:([+-])((?:\d+[hms])+))?$")


def resolve_placeholder(value, base_dir, now):
    """Resolve one fixture string; strings that are not placeholders come back unchanged.

    - ``@now``, ``@now+2h``, ``@now-30m``, ``@now+1h30m`` -> RFC 3339 UTC time
    - ``@file:PATH`` -> the text of ``base_dir/PATH`` (exact bytes, UTF-8)
    - ``@sha256:PATH`` -> ``sha256:<hex>`` of that file's bytes
    - ``@assessment-name:PATH`` -> ``aicr-assessment-<first 16 hex of @sha256:PATH>``
    - ``@digest:WORD`` -> ``sha256:<hex>`` of the word: a stable made-up digest
    - ``@plan-name:WORD`` -> ``aicr-plan-<first 16 hex of @digest:WORD>``
    - ``@rollout-name:WORD:N`` -> ``rollout-<first 16 hex of @digest:WORD>-N``
    - ``@@...`` -> the literal string ``@...``
    """
    if not isinstance(value, str) or not value.startswith("@"):
        return value
    if value.startswith("@@"):
        return value[1:]
    head, _, arg = value[1:].partition(":")

    def file_bytes(rel):
        with open(os.path.join(base_dir, rel), "rb") as f:
            return f.read()

    m = _NOW.match(value[1:])
    if m:
        delta = datetime.timedelta()
        for amount, unit in re.findall(r"(\d+)([hms])", m.group(2) or ""):
            delta += datetime.timedelta(**{{"h": "hours", "m": "minutes", "s": "seconds"}[unit]: int(amount)})
        return format_time(now - delta if m.group(1) == "-" else now + delta)
    if head == "file":
        return file_bytes(arg).decode("utf-8")
    if head == "sha256":
        return sha256_digest(file_bytes(arg))
    if head == "assessment-name":
        return "aicr-assessment-" + hashlib.sha256(file_bytes(arg)).hexdigest()[:16]
    if head == "digest":
        return sha256_digest(arg.encode("utf-8"))
    if head == "plan-name":
        return "aicr-plan-" + hashlib.sha256(arg.encode("utf-8")).hexdigest()[:16]
    if head == "rollout-name":
        word, _, attempt = arg.rpartition(":")
        return "rollout-%s-%s" % (hashlib.sha256(word.encode("utf-8")).hexdigest()[:16], attempt)
    raise ValueError("unknown fixture placeholder %r" % value)


def resolve(value, base_dir, now):
    """Resolve placeholders in every string of a YAML value (dicts, lists, scalars)."""
    if isinstance(value, dict):
        return {k: resolve(v, base_dir, now) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, base_dir, now) for v in value]
    return resolve_placeholder(value, base_dir, now)


def load_fixtures(fixtures_dir, now=None):
    """Read every ``*.yaml`` in ``fixtures_dir`` (multi-document) and resolve placeholders.

    Returns a list of object dicts in file order (files sorted by name).
    """
    now = now or utc_now()
    objects = []
    for name in sorted(os.listdir(fixtures_dir)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(fixtures_dir, name), encoding="utf-8") as f:
            for doc in yaml.load_all(f, Loader=_FixtureLoader):
                if doc:
                    objects.append(resolve(doc, fixtures_dir, now))
    return objects
