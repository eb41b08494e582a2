"""The differential test of kubeconfig YAML: the plugin's loader and the real kubectl on generated files.

Hypothesis writes kubeconfig files full of what YAML 1.1 and go-yaml make of them: booleans
spelled ``yes``/``On``/``n``, numbers spelled ``017``/``1_000``/``0x1F``/``.5``, nulls
(``~``, ``null``, nothing), timestamps, explicit tags (``!!str``, ``!!binary``, ``!!int``,
``!!bool``, ``!!null``, ``!custom``, ``!``), every quoting style (plain, single, double,
literal and folded block), flow and block collections, anchors, aliases and merge keys,
values starting with ``-``. Each file is read by ``kubectl config view --raw -o json
--kubeconfig F`` (what kubectl understood) and by :func:`kubectl_aicr.kube.kubeconfig.load` in
this process; then:

- both refuse: agreed (the plugin's message is checked elsewhere);
- one accepts and the other refuses: a failure (the plugin's only deliberate refusal of
  a file kubectl reads, a duplicate mapping key, is never generated);
- both accept: every field the plugin reads must hold kubectl's value, entry by entry.

The examples are derandomized (a fixed seed, so CI sees the same files every run) and
batched: each example is a handful of files whose kubectl runs go in parallel.
"""

import base64
import json
import os
import subprocess

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kubectl_aicr.kube import kubeconfig
from kubectl_aicr.errors import ConfigError
from tests.support.plugin import VENV_BIN

KUBECTL = os.path.join(VENV_BIN, "kubectl")
FILES_PER_EXAMPLE = 6
EXAMPLES = 50  # 300 files

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="no kubectl in .venv (make venv)")

# ---------------------------------------------------------------------------------------------
# Scalars: a text, then how it is spelled in YAML

WORDS = ["c1", "prod", "https://10.0.0.1:6443", "https://H.example:443/k8s/c-x", "arn:aws:eks:x:1:cluster/p",
         "-Kx9_tok-en", "--region", "?q", ":c", "a b", "a #b", "a: b", "x,y", "é ü", "~", "null", "Null", "NULL",
         "", "yes", "No", "ON", "off", "y", "N", "oN", "True", "FALSE", "017", "-017", "0o17", "0x1F", "0x_1F",
         "1_000", "08", "1e3", ".5", "-.5", "+1", "0", "1e999", ".inf", "-.Inf", ".NaN", "2001-01-01",
         "2001-01-01 10:00:00", "1:20", "<<", "*x", "&y", "!z", "%p", "@at", "'q'", '"d"', "[a]", "{a}", "|", ">",
         "-", "--", "---", "...", "#c", "v1", "Config", "client.authentication.k8s.io/v1beta1", "Never", "IfAvailable"]
TAGS = ["", "", "", "", "!!str ", "!!binary ", "!!int ", "!!bool ", "!!null ", "!!float ", "!custom ", "! ",
        "!!timestamp ", "!<tag:yaml.org,2002:str> "]
STYLES = ["plain", "plain", "plain", "single", "double", "literal", "folded"]
# What most fields hold: strings in every spelling that keeps them strings (so most files load, and the
# values are compared); one field in a dozen draws from everything above instead.
SAFE_WORDS = ["c1", "prod", "https://10.0.0.1:6443", "https://H.example:443/k8s/c-x", "arn:aws:eks:x:1:cluster/p",
              "-Kx9_tok-en", "--region", "?q", ":c", "a b", "é ü", "oN", "1:20", "2001-01-01", "v1", "-", "--",
              "client.authentication.k8s.io/v1beta1", "Never", "IfAvailable", "e0", "e1"]
SAFE_TAGS = ["", "", "", "", "!!str ", "!!binary ", "!custom ", "! ", "!<tag:yaml.org,2002:str> "]
BOOL_WORDS = ["true", "false", "yes", "No", "ON", "off", "y", "N", "True", "FALSE", "Y", "n"]


def spell(text, style, tag, indent):
    """``text`` written in ``style`` with ``tag``, for a value whose key sits at ``indent`` spaces."""
    if tag == "!!binary ":
        text = base64.b64encode(text.encode("utf-8")).decode("ascii")
    if style == "single":
        body = "'%s'" % text.replace("'", "''")
    elif style == "double":
        body = json.dumps(text, ensure_ascii=False)
    elif style in ("literal", "folded") and text and text.strip(" ") == text:
        body = "%s-\n%s%s" % ("|" if style == "literal" else ">", " " * (indent + 2), text)
    else:
        body = text
    return (tag + body).rstrip(" ") if body or tag else ""


@st.composite
def scalar(draw, words=SAFE_WORDS):
    if draw(st.integers(0, 11)) == 0:
        return ("scalar", draw(st.sampled_from(WORDS)), draw(st.sampled_from(STYLES)), draw(st.sampled_from(TAGS)))
    return ("scalar", draw(st.sampled_from(words)), draw(st.sampled_from(STYLES)), draw(st.sampled_from(SAFE_TAGS)))


@st.composite
def boolean(draw):
    if draw(st.integers(0, 11)) == 0:
        return draw(scalar())
    return ("scalar", draw(st.sampled_from(BOOL_WORDS)), "plain", draw(st.sampled_from(["", "", "!!bool "])))


def pem_like():
    return st.sampled_from(["-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "abc", "\x00\xff"])


@st.composite
def data_value(draw):
    """A *-data field: base64 as kubectl writes it, !!binary of that base64 (kubectl decodes twice), or not."""
    raw = draw(pem_like())
    once = base64.b64encode(raw.encode("latin-1")).decode("ascii")
    kind = draw(st.sampled_from(["plain", "plain", "plain", "binary-twice", "binary-twice", "binary-once", "broken",
                                 "scalar"]))
    if kind == "plain":
        return ("scalar", once, draw(st.sampled_from(STYLES)), "")
    if kind == "binary-twice":
        return ("scalar", once, draw(st.sampled_from(["plain", "literal", "double"])), "!!binary ")
    if kind == "binary-once":
        return ("raw", "!!binary " + once)
    if kind == "broken":
        return ("scalar", once[:-1] + " ", "double", "")
    return draw(scalar())


def strings():
    return st.lists(scalar(), max_size=3).map(lambda items: ("seq", items))


def extensions():
    """A list of named extensions (only their names are typed; the plugin passes a cluster's exec extension to
    an exec plugin, kubectl checks all)."""
    named = st.builds(lambda name, value: ("map", [("name", name), ("extension", ("map", [("k", value)]))]),
                      scalar(), scalar())
    return st.lists(named, max_size=2).map(lambda items: ("seq", items))


CLUSTER_FIELDS = {"server": scalar, "tls-server-name": scalar, "proxy-url": scalar,
                  "insecure-skip-tls-verify": boolean, "certificate-authority-data": data_value,
                  "disable-compression": boolean, "extensions": extensions,
                  "certificate-authority": lambda: st.just(("scalar", "/etc/k/ca.crt", "plain", ""))}
USER_FIELDS = {"token": scalar, "username": scalar, "password": scalar, "as": scalar, "as-uid": scalar,
               "client-certificate-data": data_value, "client-key-data": data_value, "as-groups": strings}
EXEC_FIELDS = {"command": scalar, "apiVersion": scalar, "installHint": scalar, "interactiveMode": scalar,
               "provideClusterInfo": boolean, "args": strings}
CONTEXT_FIELDS = {"cluster": scalar, "user": scalar, "namespace": scalar, "extensions": extensions}


def key(draw, name):
    """A key as written: mostly plain, else quoted or tagged."""
    return draw(st.sampled_from([name, name, name, name, "'%s'" % name, '"%s"' % name, "!!str " + name]))


@st.composite
def body(draw, fields):
    names = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=len(fields)))
    return ("map", [(key(draw, name), draw(fields[name]())) for name in names])


@st.composite
def user_body(draw):
    node = draw(body(USER_FIELDS))
    if draw(st.booleans()):
        node[1].append(("exec", draw(body(EXEC_FIELDS))))
    if draw(st.integers(0, 4)) == 0:
        node[1].append(("as-user-extra", ("map", [("scopes", draw(strings()))])))
    return node


@st.composite
def entries(draw, kind, inner):
    """A clusters/users/contexts list: names, and maybe an entry sharing another's body (alias or merge)."""
    items = []
    for index in range(draw(st.integers(0, 2))):
        name = ("scalar", draw(st.sampled_from(["e%d" % index, "yes", "017", "-x", "e0"])),
                draw(st.sampled_from(STYLES)), draw(st.sampled_from(["", "", "!!str "])))
        entry_body = draw(inner)
        share = items and draw(st.integers(0, 3))
        if share == 1:
            entry_body = ("alias", "b0")
        elif share == 2:
            entry_body = ("map", [("<<", ("alias", "b0"))] + entry_body[1][:1])
        if index == 0:
            entry_body = ("anchor", "b0", entry_body)
        items.append(("map", [("name", name), (kind, entry_body)]))
    return ("seq", items)


@st.composite
def kubeconfig_text(draw):
    top = [("clusters", draw(entries("cluster", body(CLUSTER_FIELDS)))),
           ("users", draw(entries("user", user_body()))),
           ("contexts", draw(entries("context", body(CONTEXT_FIELDS))))]
    if draw(st.integers(0, 3)) == 0:
        top.append(("preferences", ("map", [("colors", draw(boolean()))])))
    if draw(st.booleans()):
        top.append(("current-context", draw(scalar(["e0", "e1", "yes", "", "~"]))))
    if draw(st.booleans()):
        top[:0] = [("apiVersion", ("scalar", "v1", "plain", "")), ("kind", ("scalar", "Config", "plain", ""))]
    flow = draw(st.integers(0, 3)) == 0
    text = emit_flow(("map", top)) + "\n" if flow else "".join(emit(("map", top), 0))
    head = draw(st.sampled_from(["", "", "", "---\n", "# written by hand\n---\n", "%YAML 1.1\n---\n"]))
    return head + text + draw(st.sampled_from(["", "", "", "...\n", "# end\n"]))


def emit(node, indent):
    """Block-style lines for ``node`` whose parent key is at ``indent`` (a top-level mapping at 0)."""
    pad = " " * indent
    lines = []
    for key, value in node[1]:
        lines.extend(entry_lines(pad + key + ":", value, indent))
    return lines


def entry_lines(head, value, indent):
    kind = value[0]
    if kind == "scalar":
        text = spell(value[1], value[2], value[3], indent)
        return [head + (" " + text if text else "") + "\n"]
    if kind == "raw":
        return [head + " " + value[1] + "\n"]
    if kind == "alias":
        return [head + " *" + value[1] + "\n"]
    anchor = ""
    if kind == "anchor":
        anchor, value, kind = " &" + value[1], value[2], value[2][0]
    if kind == "map":
        if not value[1]:
            return [head + anchor + " {}\n"]
        return [head + anchor + "\n"] + emit(value, indent + 2)
    if not value[1]:
        return [head + anchor + " []\n"]
    lines = [head + anchor + "\n"]
    for item in value[1]:
        if item[0] == "map" and item[1]:
            first = emit(item, indent + 2)
            lines.append(" " * indent + "- " + first[0][indent + 2:])
            lines.extend(first[1:])
        else:
            lines.extend(entry_lines(" " * indent + "-", item, indent))
    return lines


def emit_flow(node):
    kind = node[0]
    if kind == "scalar":
        style = node[2] if node[2] in ("single", "double") else "double"
        return spell(node[1], style, node[3], 0) or '""'
    if kind == "raw":
        return node[1]
    if kind == "alias":
        return "*" + node[1]
    if kind == "anchor":
        return "&%s %s" % (node[1], emit_flow(node[2]))
    if kind == "map":
        return "{%s}" % ", ".join("%s: %s" % (key, emit_flow(value)) for key, value in node[1])
    return "[%s]" % ", ".join(emit_flow(item) for item in node[1])


# ---------------------------------------------------------------------------------------------
# What each side understood, in one shape


def kubectl_view(path):
    return subprocess.Popen([KUBECTL, "config", "view", "--raw", "-o", "json", "--kubeconfig", path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"HOME": os.path.dirname(path),
                                                                                 "PATH": os.defpath})


def _data(text):
    return base64.b64decode(text) if text else None


def exec_command(command, folder):
    """The command kubectl runs: one with a slash but not absolute is relative to the kubeconfig's folder
    (client-go ResolveLocalPaths; ``config view`` shows it as written)."""
    if "/" in command and not os.path.isabs(command):
        return os.path.normpath(os.path.join(folder, command))
    return command


def from_kubectl(view, folder):
    """kubectl's JSON view -> {section: {name: fields}} with the plugin's field names and types."""
    clusters = {}
    for item in view.get("clusters") or []:
        c = item["cluster"]
        clusters[item["name"]] = {
            "server": c.get("server", ""), "certificate_authority": c.get("certificate-authority") or None,
            "certificate_authority_data": _data(c.get("certificate-authority-data")),
            "insecure_skip_tls_verify": c.get("insecure-skip-tls-verify", False),
            "tls_server_name": c.get("tls-server-name") or None, "proxy_url": c.get("proxy-url") or None,
            "extensions": {e["name"]: e["extension"] for e in c.get("extensions") or () if e["extension"] is not None}}
    users = {}
    for item in view.get("users") or []:
        u = item["user"]
        spec = u.get("exec")
        users[item["name"]] = {
            "token": u.get("token") or None, "username": u.get("username") or None,
            "password": u.get("password") or None, "impersonate": u.get("as") or None,
            "impersonate_uid": u.get("as-uid") or None, "impersonate_groups": tuple(u.get("as-groups") or ()),
            "impersonate_extra": tuple((k, tuple(v or ())) for k, v in (u.get("as-user-extra") or {}).items()),
            "client_certificate_data": _data(u.get("client-certificate-data")),
            "client_key_data": _data(u.get("client-key-data")),
            "exec": None if spec is None else {
                "command": exec_command(spec.get("command", ""), folder), "args": tuple(spec.get("args") or ()),
                "api_version": spec.get("apiVersion", ""), "install_hint": spec.get("installHint", ""),
                "provide_cluster_info": spec.get("provideClusterInfo", False),
                "interactive_mode": spec.get("interactiveMode", "")}}
    contexts = {item["name"]: {"cluster": item["context"].get("cluster", ""), "user": item["context"].get("user", ""),
                               "namespace": item["context"].get("namespace") or None}
                for item in view.get("contexts") or []}
    return {"clusters": clusters, "users": users, "contexts": contexts,
            "current-context": view.get("current-context", "")}


def from_plugin(config):
    clusters = {name: {"server": c.server, "certificate_authority": c.certificate_authority,
                       "certificate_authority_data": c.certificate_authority_data,
                       "insecure_skip_tls_verify": c.insecure_skip_tls_verify,
                       "tls_server_name": c.tls_server_name or None, "proxy_url": c.proxy_url or None,
                       "extensions": c.extensions or {}}
                for name, c in config.clusters.items()}
    users = {}
    for name, u in config.auth_infos.items():
        spec = u.exec
        users[name] = {
            "token": u.token or None, "username": u.username or None, "password": u.password or None,
            "impersonate": u.impersonate or None, "impersonate_uid": u.impersonate_uid or None,
            "impersonate_groups": tuple(u.impersonate_groups), "impersonate_extra": tuple(u.impersonate_extra),
            "client_certificate_data": u.client_certificate_data, "client_key_data": u.client_key_data,
            "exec": None if spec is None else {
                "command": spec.command, "args": tuple(spec.args), "api_version": spec.api_version,
                "install_hint": spec.install_hint, "provide_cluster_info": spec.provide_cluster_info,
                "interactive_mode": spec.interactive_mode}}
    contexts = {name: {"cluster": c.cluster, "user": c.auth_info, "namespace": c.namespace or None}
                for name, c in config.contexts.items()}
    return {"clusters": clusters, "users": users, "contexts": contexts, "current-context": config.current_context}


def plugin_view(path):
    try:
        return from_plugin(kubeconfig.load(path)), None
    except ConfigError as exc:
        return None, str(exc)


# ---------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          phases=[Phase.explicit, Phase.generate],  # no shrinking: the message shows the one file that differs
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(kubeconfig_text(), min_size=FILES_PER_EXAMPLE, max_size=FILES_PER_EXAMPLE))
def test_the_plugin_reads_every_kubeconfig_as_kubectl_does(tmp_path_factory, texts):
    folder = tmp_path_factory.mktemp("yaml-parity")
    paths = []
    for index, text in enumerate(texts):
        path = str(folder / ("config-%d" % index))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
    runs = [kubectl_view(path) for path in paths]
    for path, text, process in zip(paths, texts, runs):
        out, err = process.communicate(timeout=60)
        theirs = from_kubectl(json.loads(out), str(folder)) if process.returncode == 0 else None
        ours, problem = plugin_view(path)
        assert (theirs is None) == (ours is None), (
            "kubectl %s, the plugin %s, on:\n%s" % ("refused: " + err.decode() if theirs is None else "accepted",
                                                    "refused: " + problem if ours is None else "accepted", text))
        if theirs is not None:
            for section in ("clusters", "users", "contexts"):
                assert sorted(ours[section]) == sorted(theirs[section]), (section, text)
                for name in theirs[section]:
                    assert ours[section][name] == theirs[section][name], (section, name, text)
            assert ours["current-context"] == theirs["current-context"], text


def test_the_generator_writes_what_it_means():
    """The emitter's own check: a few hand-written nodes come out as the YAML they stand for."""
    node = ("map", [("a", ("scalar", "yes", "plain", "")), ("b", ("seq", [("map", [("n", ("scalar", "x", "single",
                                                                                            "!!str "))])])),
                    ("c", ("anchor", "k", ("map", [("d", ("scalar", "hi", "literal", "!!binary "))]))),
                    ("e", ("alias", "k"))])
    assert "".join(emit(node, 0)) == ("a: yes\nb:\n- n: !!str 'x'\nc: &k\n  d: !!binary |-\n    aGk=\ne: *k\n")
    assert emit_flow(node) == '{a: "yes", b: [{n: !!str \'x\'}], c: &k {d: !!binary "aGk="}, e: *k}'


LONG = "1" * 5000  # past Python's 4,300-digit limit on int("..."): kubectl reads it, as a string


@pytest.mark.parametrize("spelling,accepted", [
    (LONG, True), ("-" + LONG, True), ("+" + LONG, True), ("0x" + "F" * 5000, True), ("0o" + "7" * 5000, True),
    ("0b" + "1" * 5000, True), ("1_" * 5000 + "1", True), (LONG + ".5", True),
    ("0" * 5000 + "17", False),  # octal 15: a number, which no string field takes
    ("!!int " + LONG, False), ("!!float " + LONG, False)],
    ids=["decimal", "negative", "plus", "hex", "octal", "binary", "underscores", "float", "leading-zeros",
         "int-tag", "float-tag"])
def test_integers_past_pythons_digit_limit_are_read_as_kubectl_reads_them(tmp_path, spelling, accepted):
    """go-yaml v2 resolves a number out of int64/uint64/float64 range as a string: kubectl reads it so in
    every string field and extension, in block and flow style; a tag that wants a number refuses it."""
    block = ("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://h:6443\n"
             "    tls-server-name: %s\n    extensions:\n    - name: x\n      extension: {k: %s}\n"
             "users:\n- name: u\n  user:\n    token: %s\n    as-groups: [%s]\n"
             "contexts:\n- name: ctx\n  context: {cluster: c, user: u, namespace: %s}\ncurrent-context: ctx\n"
             % ((spelling,) * 5))
    flow = ('{"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": '
            '"https://h:6443", "extensions": [{"name": "x", "extension": {"k": %s}}]}}], "users": [{"name": "u", '
            '"user": {"token": %s}}], "current-context": "c"}' % (spelling, spelling))
    for index, text in enumerate([block, flow] if " " not in spelling else [block]):
        path = str(tmp_path / ("config-%d" % index))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        process = kubectl_view(path)
        out, err = process.communicate(timeout=60)
        assert (process.returncode == 0) == accepted, err.decode()[-300:]
        ours, problem = plugin_view(path)
        assert (ours is not None) == accepted, problem
        if accepted:
            theirs = from_kubectl(json.loads(out), str(tmp_path))
            assert ours == theirs
            assert ours["users"]["u"]["token"] == spelling
