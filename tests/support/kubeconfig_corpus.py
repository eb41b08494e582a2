"""A corpus of kubeconfigs as approvers' tools write them, for the kubectl parity test (test-only code).

Each case is built by a function registered with :func:`case`; it writes its files into a
fresh folder and returns a :class:`Case` saying how to run it and what must happen:

- ``SAME``: kubectl and the plugin reach the same server with the same credentials
  (path, Authorization, client certificate subject, SNI, Impersonate-* headers, and the
  proxy's record when a proxy is involved);
- ``BOTH_REFUSE``: neither sends anything; the plugin says why in one line;
- ``FALLBACK``: kubectl falls back (``localhost:8080``, plain HTTP, a password prompt)
  where the plugin stops with a clear one-line error and sends nothing;
- ``ANONYMOUS``: a context without a user: kubectl prompts for a user name, the plugin
  sends no credentials (the issue asks for it; a plugin never prompts);
- ``PLUGIN_REFUSES``: a deliberate difference (README): kubectl reaches the server as
  ``kubectl_user``, the plugin sends nothing and says why in one line.

The cases ported from client-go's own clientcmd tests are in :mod:`tests.support.clientcmd_cases`.

Generator styles copied: kind, kubeadm admin.conf, k3s, minikube (file paths and
extensions), ``aws eks update-kubeconfig`` (exec v1beta1 and the old v1alpha1), GKE
(gke-gcloud-auth-plugin exec with installHint and provideClusterInfo, the removed gcp
auth-provider), AKS (kubelogin exec, the removed azure auth-provider), int128/kubelogin
(oidc-login exec), the oidc auth-provider, ``oc login`` (OpenShift names), Rancher (a
path prefix), JSON, CRLF with a byte order mark, and hand merges over several files.

Also holds the extra test API servers the corpus needs (:class:`Servers`).
"""

import base64
import json
import os
import socket
import time
from typing import Dict, NamedTuple, Optional, Tuple

import pytest
import yaml

try:
    from . import apiserver, certs
    from .proxy import TunnelProxy
except ImportError:  # tests/ on sys.path
    import apiserver
    import certs
    from proxy import TunnelProxy

SAME, BOTH_REFUSE, FALLBACK, ANONYMOUS = "same", "both-refuse", "fallback", "anonymous"
PLUGIN_REFUSES = "plugin-refuses"
ROLE = "install"  # the fixture rollout both clients ask for
PREFIX = "/k8s/clusters/c-m-4xq7w"
NAMED_HOST = "api.example.invalid"
NAMED_HOST_MIXED_CASE = "API.Example.INVALID"
SNI_NAME = "kubernetes.default.svc"
IDN_HOST, IDN_ASCII = "b\u00fccher.example", "xn--bcher-kva.example"  # and its IDNA ASCII form
DOTS = ".."  # a name Go's crypto/x509 matches only exactly with a DNS SAN
JURGEN, JURGEN_PASSWORD = "jürgen", "pässwörd£"


class Case(NamedTuple):
    """How to run one corpus entry and what must happen (see the module docstring)."""

    name: str
    expect: str
    server: str = "main"                 # which server's log to compare: main, special, v6, sni, cn, chain
    kubeconfig_env: Optional[str] = None  # the KUBECONFIG value
    args: Tuple[str, ...] = ()           # flags for both clients (--kubeconfig, --context)
    env: Dict[str, str] = {}
    cwd: Optional[str] = None
    plugin_error: str = ""               # regex the plugin's one error line must match
    kubectl_error: str = ""              # regex kubectl's stderr must match
    proxy: Optional[str] = None          # "http", "https" or "socks5": compare that proxy's records too
    path_first: Optional[str] = None     # a folder put first on PATH (fake credential plugins)
    path_only: bool = False              # PATH is only that folder (and the python3 the plugin runs on)
    kubectl_user: str = ""               # PLUGIN_REFUSES: the user kubectl is seen as


# ---------------------------------------------------------------------------------------------
# The servers and proxies


def non_loopback_ipv4():
    """An IPv4 address of this machine that is not loopback, or None."""
    for target in ("203.0.113.1", "198.51.100.1", "10.255.255.255"):
        try:  # a UDP "connect" only picks the route and the source address: nothing is sent
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                address = probe.getsockname()[0]
        except OSError:
            continue
        if not address.startswith("127.") and address != "0.0.0.0":
            return address
    return None


class Servers:
    """The extra HTTPS test API servers (started together, stopped by :meth:`stop`).

    ``special``: 127.0.0.1, certificate for 127.0.0.1, ::1, api.example.invalid and this
    machine's address; basic auth (user jürgen); also serves under :data:`PREFIX`.
    ``v6``: on ::1. ``sni``: a certificate for kubernetes.default.svc only. ``cn``: a
    certificate whose name is only in its CN. ``chain``: sends its certificate followed by its CA's
    (the others send their certificate alone). ``odd``: a certificate for 127.0.0.1, ``..`` and
    xn--bcher-kva.example (the IDNA form of bücher.example) only. The https proxy's certificate (127.0.0.1, localhost) is
    signed by ``proxy_ca`` (file ``proxy_ca_file``), which no server uses. Plus an HTTP CONNECT and a SOCKS5 proxy that
    route api.example.invalid and this machine's address to ``special``.
    """

    def __init__(self, fixtures_dir):
        self.host_ip = non_loopback_ipv4()
        names = ["127.0.0.1", "::1", NAMED_HOST] + ([self.host_ip] if self.host_ip else [])
        users = apiserver.default_users() + [apiserver.User(JURGEN, (apiserver.APPROVERS,), password=JURGEN_PASSWORD)]
        self.special = apiserver.APIServer(fixtures_dir=fixtures_dir, users=users, basic_auth=True,
                                           server_names=names, path_prefix=PREFIX).start()
        self.v6 = apiserver.APIServer(fixtures_dir=fixtures_dir, host="::1").start()
        self.sni = apiserver.APIServer(fixtures_dir=fixtures_dir, server_names=[SNI_NAME]).start()
        self.cn = apiserver.APIServer(fixtures_dir=fixtures_dir, server_names=["127.0.0.1"], cn_only=True).start()
        self.chain = send_chain(apiserver.APIServer(fixtures_dir=fixtures_dir)).start()
        self.odd = with_raw_names(apiserver.APIServer(fixtures_dir=fixtures_dir), [DOTS, IDN_ASCII],
                                  ["127.0.0.1"]).start()
        routes = {"%s:%d" % (name, self.special.port): ("127.0.0.1", self.special.port)
                  for name in (NAMED_HOST, NAMED_HOST_MIXED_CASE)}
        if self.host_ip:
            routes["%s:%d" % (self.host_ip, self.special.port)] = ("127.0.0.1", self.special.port)
        routes["%s:%d" % (IDN_ASCII, self.odd.port)] = ("127.0.0.1", self.odd.port)
        self.http_proxy = TunnelProxy("http", routes).start()
        self.socks_proxy = TunnelProxy("socks5", routes).start()
        self.proxy_ca = certs.make_ca()
        self.proxy_ca_file = certs.write_ca(self.proxy_ca, self.special.workdir, "proxy-ca.crt")
        self.https_proxy = TunnelProxy("https", routes, tls=certs.write_server_cert(
            self.proxy_ca, self.special.workdir, ("127.0.0.1", "localhost"), stem="proxy")).start()

    def all(self):
        return {"special": self.special, "v6": self.v6, "sni": self.sni, "cn": self.cn, "chain": self.chain,
                "odd": self.odd}

    def proxies(self):
        return {"http": self.http_proxy, "socks5": self.socks_proxy, "https": self.https_proxy}

    def clear(self):
        for server in self.all().values():
            server.clear_requests()
        for proxy in self.proxies().values():
            proxy.clear()

    def stop(self):
        for proxy in self.proxies().values():
            proxy.stop()
        for server in self.all().values():
            server.stop()


def send_chain(server):
    """Make a not yet started APIServer send its certificate and then its CA's in the TLS handshake."""
    with open(server.server_cert.cert, "ab") as handle:
        handle.write(server.ca.cert_pem.bytes())
    server._ssl_context = server._make_ssl_context()
    return server


def with_raw_names(server, dns_names, ip_addresses):
    """Make a not yet started APIServer present a certificate for exactly these names (see
    :func:`certs.write_raw_names_server_cert`)."""
    server.server_cert = certs.write_raw_names_server_cert(server.ca, server.workdir, dns_names, ip_addresses)
    server._ssl_context = server._make_ssl_context()
    return server


@pytest.fixture(scope="session")
def corpus_servers():
    """The :class:`Servers`, once per test process (import this fixture into a test module to use it)."""
    servers = Servers(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures"))
    yield servers
    servers.stop()


# ---------------------------------------------------------------------------------------------
# Building blocks


class Context:
    """What a case builder gets: the servers, its own folder, and helpers to write files."""

    def __init__(self, main, servers, folder):
        self.main, self.servers, self.folder = main, servers, str(folder)
        self.bin = os.path.join(self.folder, "bin")

    def server(self, name):
        return self.main if name == "main" else self.servers.all()[name]

    def path(self, *parts):
        path = os.path.join(self.folder, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def write(self, relpath, content, mode=0o600):
        """Write ``content`` (a dict as kubectl-style YAML: sorted keys, block style; or text) and return the path."""
        path = self.path(relpath)
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=True,
                                                                         default_flow_style=False, allow_unicode=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(path, mode)
        return path

    def token(self, user, server="main"):
        return self.server(server).token(user)

    def ca_data(self, server="main"):
        return _b64_file(self.server(server).ca_file)

    def cert_data(self, user="alice@example.com", server="main", **options):
        files = self.server(server).client_cert_files(user, **options)
        return _b64_file(files.cert), _b64_file(files.key)

    def exec_script(self, name, token, api_version="client.authentication.k8s.io/v1beta1", folder=None):
        """A small sh credential plugin printing an ExecCredential with ``token``; returns its path."""
        body = json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": {"token": token}})
        path = os.path.join(folder or self.bin, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write("#!/bin/sh\nprintf '%%s' '%s'\n" % body)
        os.chmod(path, 0o755)
        return path


def _b64_file(path):
    with open(path, "rb") as handle:
        return base64.b64encode(handle.read()).decode("ascii")


def kubeconfig(clusters, users, contexts, current, **top):
    """A kubeconfig dict from {name: cluster}, {name: user}, {name: (cluster, user[, namespace])}."""
    def context(spec):
        body = {"cluster": spec[0]}
        if spec[1] is not None:
            body["user"] = spec[1]
        if len(spec) > 2:
            body["namespace"] = spec[2]
        return body
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
              "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
              "users": [{"name": n, "user": u} for n, u in users.items()],
              "contexts": [{"name": n, "context": context(spec)} for n, spec in contexts.items()],
              "current-context": current}
    config.update(top)
    return config


def single(ctx, user, server="main", cluster_name="c", user_name="u", context_name="ctx", **cluster_extra):
    """A one-context kubeconfig for ``server`` with the CA as data and ``user`` (a user entry dict)."""
    cluster = {"server": ctx.server(server).url, "certificate-authority-data": ctx.ca_data(server)}
    cluster.update(cluster_extra)
    cluster = {k: v for k, v in cluster.items() if v is not None}
    return kubeconfig({cluster_name: cluster}, {user_name: user}, {context_name: (cluster_name, user_name)},
                      context_name)


CASES = {}


def case(function):
    """Register a case builder under its name (underscores become dashes)."""
    CASES[function.__name__.replace("_", "-")] = function
    return function


def names():
    return sorted(CASES)


def build(name, main, servers, folder):
    """Build case ``name`` in ``folder``; returns its :class:`Case`."""
    ctx = Context(main, servers, folder)
    return CASES[name](ctx)._replace(name=name)


def _kc(ctx, config, name="config"):
    """Write one kubeconfig and return a Case skeleton using it through KUBECONFIG."""
    return ctx.write(name, config)


# ---------------------------------------------------------------------------------------------
# Generator styles


@case
def kind(ctx):
    cert, key = ctx.cert_data()
    config = kubeconfig({"kind-kind": {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}},
                        {"kind-kind": {"client-certificate-data": cert, "client-key-data": key}},
                        {"kind-kind": ("kind-kind", "kind-kind")}, "kind-kind")
    return Case("", SAME, kubeconfig_env=_kc(ctx, config))


@case
def kubeadm_admin_conf(ctx):
    cert, key = ctx.cert_data(key_format="pkcs8")
    text = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: %s\n"
            "  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: kubernetes-admin\n"
            "  name: kubernetes-admin@kubernetes\ncurrent-context: kubernetes-admin@kubernetes\nkind: Config\n"
            "preferences: {}\nusers:\n- name: kubernetes-admin\n  user:\n    client-certificate-data: %s\n"
            "    client-key-data: %s\n" % (ctx.ca_data(), ctx.main.url, cert, key))
    return Case("", SAME, kubeconfig_env=ctx.write("admin.conf", text))


@case
def k3s_ec_key(ctx):
    cert, key = ctx.cert_data(key_type="ec")
    config = kubeconfig({"default": {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}},
                        {"default": {"client-certificate-data": cert, "client-key-data": key}},
                        {"default": ("default", "default")}, "default")
    return Case("", SAME, kubeconfig_env=ctx.write("k3s.yaml", config))


@case
def minikube_files_and_extensions(ctx):
    files = ctx.main.client_cert_files("alice@example.com", key_type="ec", key_format="pkcs8")
    extension = {"name": "cluster_info", "extension": {"last-update": "Mon, 01 Jan 2026 10:00:00 UTC",
                                                       "provider": "minikube.sigs.k8s.io", "version": "v1.33.0"}}
    config = kubeconfig({"minikube": {"server": ctx.main.url, "certificate-authority": ctx.main.ca_file,
                                      "extensions": [extension]}},
                        {"minikube": {"client-certificate": files.cert, "client-key": files.key}},
                        {"minikube": ("minikube", "minikube", "default")}, "minikube")
    config["contexts"][0]["context"]["extensions"] = [{"name": "context_info", "extension": {
        "last-update": "Mon, 01 Jan 2026 10:00:00 UTC", "provider": "minikube.sigs.k8s.io"}}]
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


def _eks(ctx, api_version, env):
    arn = "arn:aws:eks:us-west-2:123456789012:cluster/prod"
    ctx.exec_script("aws", ctx.token("bob@example.com"), api_version)
    exec_ = {"apiVersion": api_version, "command": "aws", "env": env,
             "args": ["--region", "us-west-2", "eks", "get-token", "--cluster-name", "prod", "--output", "json"]}
    config = kubeconfig({arn: {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}},
                        {arn: {"exec": exec_}}, {arn: (arn, arn)}, arn)
    return ctx.write("config", config)


@case
def eks_exec_v1beta1(ctx):
    return Case("", SAME, kubeconfig_env=_eks(ctx, "client.authentication.k8s.io/v1beta1", None),
                path_first=ctx.bin)


@case
def eks_exec_with_profile_env(ctx):
    path = _eks(ctx, "client.authentication.k8s.io/v1beta1", [{"name": "AWS_PROFILE", "value": "approver"}])
    return Case("", SAME, kubeconfig_env=path, path_first=ctx.bin)


@case
def eks_exec_v1alpha1_refused(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_eks(ctx, "client.authentication.k8s.io/v1alpha1", None),
                path_first=ctx.bin,
                plugin_error=r'exec plugin: invalid apiVersion "client.authentication.k8s.io/v1alpha1"',
                kubectl_error=r'invalid apiVersion "client.authentication.k8s.io/v1alpha1"')


GKE_HINT = ("Install gke-gcloud-auth-plugin for use with kubectl by following "
            "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin")


def _gke(ctx, with_plugin):
    name = "gke_aicr-project_us-central1_prod"
    if with_plugin:
        ctx.exec_script("gke-gcloud-auth-plugin", ctx.token("carol@example.com"))
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "gke-gcloud-auth-plugin",
             "installHint": GKE_HINT, "provideClusterInfo": True}
    config = kubeconfig({name: {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}},
                        {name: {"exec": exec_}}, {name: (name, name)}, name)
    return ctx.write("config", config)


@case
def gke_exec_plugin(ctx):
    return Case("", SAME, kubeconfig_env=_gke(ctx, True), path_first=ctx.bin)


@case
def gke_exec_plugin_missing(ctx):
    os.makedirs(ctx.bin, exist_ok=True)
    return Case("", BOTH_REFUSE, kubeconfig_env=_gke(ctx, False), path_first=ctx.bin, path_only=True,
                plugin_error=r"executable gke-gcloud-auth-plugin not found.*Install gke-gcloud-auth-plugin for use",
                kubectl_error=r"executable gke-gcloud-auth-plugin not found")


@case
def gke_legacy_gcp_auth_provider(ctx):
    config = single(ctx, {"auth-provider": {"name": "gcp", "config": {
        "cmd-path": "/usr/lib/google-cloud-sdk/bin/gcloud", "cmd-args": "config config-helper --format=json",
        "expiry-key": "{.credential.token_expiry}", "token-key": "{.credential.access_token}"}}})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^The gcp auth plugin has been removed\. Please use the \"gke-gcloud-auth-plugin\"",
                kubectl_error=r"The gcp auth plugin has been removed")


@case
def aks_kubelogin_exec(ctx):
    ctx.exec_script("kubelogin", ctx.token("carol@example.com"))
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin", "env": None,
             "args": ["get-token", "--environment", "AzurePublicCloud", "--server-id",
                      "6dae42f8-4368-4678-94ff-3960e28e3630", "--client-id", "80faf920-1908-4b52-b5ef-a8e7bedfc67a",
                      "--tenant-id", "72f988bf-86f1-41af-91ab-2d7cd011db47", "--login", "devicecode"],
             "installHint": "\nkubelogin is not installed which is required to connect to AAD enabled cluster.\n",
             "provideClusterInfo": False}
    config = kubeconfig({"aks-prod": {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}},
                        {"clusterUser_rg_aks-prod": {"exec": exec_}},
                        {"aks-prod": ("aks-prod", "clusterUser_rg_aks-prod")}, "aks-prod")
    return Case("", SAME, kubeconfig_env=ctx.write("config", config), path_first=ctx.bin)


@case
def aks_legacy_azure_auth_provider(ctx):
    config = single(ctx, {"auth-provider": {"name": "azure", "config": {
        "apiserver-id": "6dae42f8", "client-id": "80faf920", "config-mode": "1", "environment": "AzurePublicCloud",
        "tenant-id": "72f988bf"}}})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^The azure auth plugin has been removed\.", kubectl_error=r"The azure auth plugin")


@case
def kubelogin_oidc_login_exec(ctx):
    ctx.exec_script("kubectl-oidc_login", ctx.token("bob@example.com"))
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubectl-oidc_login",
             "args": ["get-token", "--oidc-issuer-url=https://issuer.example.invalid", "--oidc-client-id=aicr"],
             "interactiveMode": "IfAvailable"}
    return Case("", SAME, kubeconfig_env=ctx.write("config", single(ctx, {"exec": exec_}, user_name="oidc")),
                path_first=ctx.bin)


def jwt(expiry):
    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return "%s.%s.%s" % (part({"alg": "RS256"}), part({"iss": "https://issuer.example.invalid", "sub": "bob",
                                                        "exp": int(expiry)}), "c2lnbmF0dXJl")


def _oidc_with_exp(ctx, exp_json):
    """A kubeconfig whose oidc auth-provider's id-token has the claim ``"exp": <exp_json>`` written as is."""
    claims = '{"iss": "https://issuer.example.invalid", "sub": "bob", "exp": %s}' % exp_json
    token = jwt(0).split(".")
    token[1] = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    provider = {"name": "oidc", "config": {"idp-issuer-url": "https://127.0.0.1:1", "client-id": "aicr",
                                           "id-token": ".".join(token), "refresh-token": "r-e-f"}}
    return ctx.write("config", single(ctx, {"auth-provider": provider}))


@case
def oidc_id_token_exp_out_of_float_range(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_oidc_with_exp(ctx, "1" + "0" * 400),
                plugin_error=r"the oidc id-token of user u is not a valid JWT with an exp claim$",
                kubectl_error=r"value out of range")


@case
def oidc_id_token_exp_overflowing_a_float(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_oidc_with_exp(ctx, "1e400"),
                plugin_error=r"the oidc id-token of user u is not a valid JWT with an exp claim$",
                kubectl_error=r"value out of range")


@case
def oidc_id_token_exp_nan(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_oidc_with_exp(ctx, "NaN"),
                plugin_error=r"the oidc id-token of user u is not a valid JWT with an exp claim$",
                kubectl_error=r"invalid character")


@case
def oidc_id_token_exp_before_year_one(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_oidc_with_exp(ctx, str(-(1 << 62))),
                plugin_error=r"oidc id-token of user u expired at 0*1-01-01T00:00:00Z",
                kubectl_error=r"refused")


@case
def oidc_auth_provider_unexpired(ctx):
    provider = {"name": "oidc", "config": {"idp-issuer-url": "https://127.0.0.1:1", "client-id": "aicr",
                                           "id-token": jwt(time.time() + 3600), "refresh-token": "r-e-f"}}
    return Case("", SAME, kubeconfig_env=ctx.write("config", single(ctx, {"auth-provider": provider})))


@case
def oidc_auth_provider_expired(ctx):
    provider = {"name": "oidc", "config": {"idp-issuer-url": "https://127.0.0.1:1", "client-id": "aicr",
                                           "id-token": jwt(time.time() - 3600), "refresh-token": "r-e-f"}}
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", single(ctx, {"auth-provider": provider})),
                plugin_error=r"oidc id-token of user u expired at .*run any kubectl command once",
                kubectl_error=r"refused")


@case
def openshift_oc_login(ctx):
    cluster = "api-ocp-example-com:6443"
    user = "developer/api-ocp-example-com:6443"
    context = "aicr-system/api-ocp-example-com:6443/developer"
    config = kubeconfig({cluster: {"server": ctx.main.url, "certificate-authority-data": ctx.ca_data()}},
                        {user: {"token": ctx.token("bob@example.com")}},
                        {context: (cluster, user, "aicr-system")}, context)
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def rancher_path_prefix(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "special")}, server="special", cluster_name="prod")
    config["clusters"][0]["cluster"]["server"] = ctx.servers.special.url + PREFIX
    return Case("", SAME, server="special", kubeconfig_env=ctx.write("config", config))


@case
def rancher_path_prefix_trailing_slash(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "special")}, server="special")
    config["clusters"][0]["cluster"]["server"] = ctx.servers.special.url + PREFIX + "/"
    return Case("", SAME, server="special", kubeconfig_env=ctx.write("config", config))


@case
def json_kubeconfig(ctx):
    config = single(ctx, {"token": ctx.token("carol@example.com")})
    return Case("", SAME, kubeconfig_env=ctx.write("config.json", json.dumps(config, indent=2)))


@case
def crlf_and_byte_order_mark(ctx):
    text = yaml.safe_dump(single(ctx, {"token": ctx.token("carol@example.com")}), sort_keys=True)
    return Case("", SAME, kubeconfig_env=ctx.write("config", "\ufeff" + text.replace("\n", "\r\n")))


# ---------------------------------------------------------------------------------------------
# Merges and flags


@case
def merge_contexts_and_credentials_in_two_files(ctx):
    first = kubeconfig({}, {}, {"work": ("c", "u")}, "work")
    second = single(ctx, {"token": ctx.token("bob@example.com")})
    second["current-context"] = "ctx"
    return Case("", SAME, kubeconfig_env=ctx.write("a", first) + os.pathsep + ctx.write("b", second))


@case
def merge_first_file_wins_whole_entry(ctx):
    first = kubeconfig({}, {"u": {"token": ctx.token("bob@example.com")}}, {}, "")
    second = single(ctx, {"token": ctx.token("mallory@example.com"), "as": "admin"})
    return Case("", SAME, kubeconfig_env=ctx.write("a", first) + os.pathsep + ctx.write("b", second))


@case
def merge_current_context_from_first_non_empty(ctx):
    first = kubeconfig({}, {}, {}, "")
    second = single(ctx, {"token": ctx.token("carol@example.com")})
    second["contexts"].append({"name": "other", "context": {"cluster": "c", "user": "nobody"}})
    third = kubeconfig({}, {}, {}, "other")
    paths = [ctx.write(n, c) for n, c in (("a", first), ("b", second), ("c", third))]
    return Case("", SAME, kubeconfig_env=os.pathsep.join(paths))


@case
def merge_relative_paths_per_file(ctx):
    first = kubeconfig({}, {}, {"ctx": ("c", "u")}, "ctx")
    ca = ctx.write("team/certs/ca.crt", open(ctx.main.ca_file).read())
    ctx.write("team/token", ctx.token("bob@example.com") + "\n")
    second = kubeconfig({"c": {"server": ctx.main.url, "certificate-authority": "certs/ca.crt"}},
                        {"u": {"tokenFile": "token"}}, {}, "")
    assert os.path.exists(ca)
    return Case("", SAME, kubeconfig_env=ctx.write("a", first) + os.pathsep + ctx.write("team/config", second))


@case
def merge_empty_file_first(ctx):
    paths = [ctx.write("empty", ""), ctx.write("config", single(ctx, {"token": ctx.token("bob@example.com")}))]
    return Case("", SAME, kubeconfig_env=os.pathsep.join(paths))


@case
def merge_comment_only_file_first(ctx):
    paths = [ctx.write("notes", "# kubeconfig moved to ~/.kube/prod\n\n# (hand-merged)\n"),
             ctx.write("config", single(ctx, {"token": ctx.token("bob@example.com")}))]
    return Case("", SAME, kubeconfig_env=os.pathsep.join(paths))


@case
def kubeconfig_env_empty_and_repeated_entries(ctx):
    ctx.write("a.yaml", single(ctx, {"token": ctx.token("carol@example.com")}))
    return Case("", SAME, kubeconfig_env=":a.yaml::a.yaml:".replace(":", os.pathsep), cwd=ctx.folder)


@case
def merge_missing_file_skipped(ctx):
    path = ctx.write("config", single(ctx, {"token": ctx.token("carol@example.com")}))
    return Case("", SAME, kubeconfig_env=os.pathsep.join([ctx.path("gone"), path]))


@case
def explicit_kubeconfig_flag_over_env(ctx):
    good = ctx.write("good", single(ctx, {"token": ctx.token("bob@example.com")}))
    bad = ctx.write("bad", single(ctx, {"token": ctx.token("mallory@example.com")}))
    return Case("", SAME, kubeconfig_env=bad, args=("--kubeconfig", good))


@case
def context_flag_picks_another_context(ctx):
    config = ctx.main.kubeconfig(users=["alice@example.com", "carol@example.com"], current="alice@example.com")
    return Case("", SAME, kubeconfig_env=ctx.write("config", config), args=("--context", "carol"))


@case
def empty_current_context_with_context_flag(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, context_name="c1")
    config["current-context"] = ""
    return Case("", SAME, kubeconfig_env=ctx.write("config", config), args=("--context", "c1"))


# ---------------------------------------------------------------------------------------------
# Where kubectl falls back or prompts, and what both refuse


LOCALHOST_8080 = r"localhost:8080"


@case
def empty_current_context(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, context_name="c1")
    config["current-context"] = ""
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", config), kubectl_error=LOCALHOST_8080,
                plugin_error=r"^no context chosen: .*--context NAME \(contexts: c1\)$")


@case
def no_kubeconfig_at_all(ctx):
    return Case("", FALLBACK, kubeconfig_env=ctx.path("nothing-here"), kubectl_error=LOCALHOST_8080,
                plugin_error=r"^no configuration has been provided")


@case
def context_names_undefined_cluster(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["contexts"][0]["context"]["cluster"] = "gone"
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", config), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^context "ctx" names cluster "gone", which is not defined')


@case
def cluster_without_server(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    del config["clusters"][0]["cluster"]["server"]
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", config), kubectl_error=LOCALHOST_8080,
                plugin_error=r'^no server found for cluster "c"')


@case
def context_names_undefined_user(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["contexts"][0]["context"]["user"] = "gone"
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", config), kubectl_error=r"Please enter Username",
                plugin_error=r'^context "ctx" names user "gone", which is not defined')


@case
def context_without_user(ctx):
    config = single(ctx, {"token": "unused"})
    config["users"] = None
    del config["contexts"][0]["context"]["user"]
    return Case("", ANONYMOUS, kubeconfig_env=ctx.write("config", config), kubectl_error=r"Please enter Username")


@case
def http_server_url(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["clusters"][0]["cluster"]["server"] = ctx.main.url.replace("https://", "http://")
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", config), kubectl_error=r".",
                plugin_error=r"is not an https:// URL: kubectl would send its requests unencrypted")


@case
def server_without_scheme(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["clusters"][0]["cluster"]["server"] = ctx.main.url.replace("https://", "")
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", config), kubectl_error=r".",
                plugin_error=r"has no https:// scheme")


@case
def unknown_context_flag(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config), args=("--context", "nope"),
                plugin_error=r'^context "nope" does not exist', kubectl_error=r'context "nope" does not exist')


@case
def kubeconfig_names_a_folder(ctx):
    os.makedirs(ctx.path("folder", "x"), exist_ok=True)
    folder = os.path.dirname(ctx.path("folder", "x"))
    return Case("", BOTH_REFUSE, kubeconfig_env=folder, plugin_error=r"^kubeconfig .*folder is a folder, not a file$",
                kubectl_error=r"is a directory")


@case
def ca_with_insecure_skip_tls_verify(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, **{"insecure-skip-tls-verify": True})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^specifying a root certificates file with the insecure flag is not allowed",
                kubectl_error=r"specifying a root certificates file with the insecure flag is not allowed")


@case
def raw_pem_in_ca_data(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["clusters"][0]["cluster"]["certificate-authority-data"] = open(ctx.main.ca_file).read()
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"certificate-authority-data holds PEM text, but it must be base64-encoded",
                kubectl_error=r"illegal base64 data at input byte 0")


@case
def name_used_twice_in_one_file(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["users"].append({"name": "u", "user": {"token": "other"}})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r'duplicate name "u" in users', kubectl_error=r'duplicate name "u" in list')


@case
def number_where_a_string_belongs(ctx):
    config = single(ctx, {"token": 12345})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"token must be a string, not a number", kubectl_error=r"cannot unmarshal number")


@case
def token_and_basic_auth(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com"), "username": "bob", "password": "x"})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^more than one authentication method found for u; found \[token basicAuth\]",
                kubectl_error=r"more than one authentication method found for u")


@case
def exec_v1_without_interactive_mode(ctx):
    script = ctx.exec_script("get-token", ctx.token("bob@example.com"), "client.authentication.k8s.io/v1")
    config = single(ctx, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": script}})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^interactiveMode must be specified for u to use exec authentication plugin$",
                kubectl_error=r"interactiveMode must be specified for u")


@case
def exec_plugin_exits_73(ctx):
    script = ctx.write("bin/fail", "#!/bin/sh\necho 'token expired: run login' >&2\nexit 73\n", mode=0o755)
    config = single(ctx, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": script,
                                   "interactiveMode": "Never"}})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"executable .*/bin/fail failed with exit code 73$", kubectl_error=r"exit code 73")


def _exec_printing(ctx, output):
    """A one-context kubeconfig whose v1 exec plugin prints ``output`` as it is (client-go reads JSON or YAML)."""
    script = ctx.write("bin/print-credential", "#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % output, mode=0o755)
    config = single(ctx, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": script,
                                   "interactiveMode": "Never"}})
    return ctx.write("config", config)


V1_CREDENTIAL = "apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\n"


@case
def exec_plugin_prints_block_yaml(ctx):
    output = V1_CREDENTIAL + "status:\n  token: %s\n  expirationTimestamp: 2099-01-01T00:00:00Z" % ctx.token(
        "bob@example.com")
    return Case("", SAME, kubeconfig_env=_exec_printing(ctx, output))


@case
def exec_plugin_prints_a_yaml_stream_of_which_the_first_document_counts(ctx):
    output = "# from a wrapper\n---\n%sstatus: {token: !!binary %s}\n---\nlater: [not read" % (
        V1_CREDENTIAL, base64.b64encode(ctx.token("carol@example.com").encode()).decode())
    return Case("", SAME, kubeconfig_env=_exec_printing(ctx, output))


@case
def exec_plugin_prints_yaml_with_a_yes_token(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec_printing(ctx, V1_CREDENTIAL + "status:\n  token: yes"),
                plugin_error=r"decoding stdout: status\.token must be a string$",
                kubectl_error=r"cannot unmarshal bool into Go struct field ExecCredentialStatus\.status\.token")


@case
def exec_plugin_prints_a_lone_surrogate_escape_in_its_token(ctx):
    # Go's encoding/json decodes a lone "\ud800" as U+FFFD; the token then goes out as its UTF-8 bytes.
    output = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "%s\\ud800"}}' \
             % ctx.token("bob@example.com")
    return Case("", SAME, kubeconfig_env=_exec_printing(ctx, output))


LONG_NUMBER = "1" * 5000  # past Python's 4,300-digit limit on int("...")


@case
def exec_plugin_prints_json_with_a_number_of_5000_digits(ctx):
    # An unknown field's number is only checked for syntax by Go's encoding/json: kubectl reads the credential.
    output = ('{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "extra": %s, '
              '"status": {"token": "%s", "n": -%s.5e3}}' % (LONG_NUMBER, ctx.token("bob@example.com"), LONG_NUMBER))
    return Case("", SAME, kubeconfig_env=_exec_printing(ctx, output))


@case
def exec_plugin_prints_json_with_a_token_of_5000_digits(ctx):
    output = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": %s}}' \
             % LONG_NUMBER
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec_printing(ctx, output),
                plugin_error=r"decoding stdout: status\.token must be a string$",
                kubectl_error=r"cannot unmarshal number into Go struct field ExecCredentialStatus\.status\.token")


@case
def exec_plugin_prints_yaml_with_a_token_of_5000_digits(ctx):
    # go-yaml v2 resolves a number out of every range as a string: kubectl sends it as the token.
    return Case("", SAME, kubeconfig_env=_exec_printing(ctx, V1_CREDENTIAL + "status:\n  token: " + LONG_NUMBER))


@case
def exec_plugin_prints_json_then_text(ctx):
    output = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "%s"}}' \
             ' done' % ctx.token("bob@example.com")
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec_printing(ctx, output),
                plugin_error=r"decoding stdout: its output is not valid JSON$", kubectl_error=r"invalid character")


@case
def exec_plugin_prints_broken_yaml(ctx):
    output = V1_CREDENTIAL + "status:\n  token: %s\n bad: indent" % ctx.token("bob@example.com")
    return Case("", BOTH_REFUSE, kubeconfig_env=_exec_printing(ctx, output),
                plugin_error=r"decoding stdout: its output is not valid YAML \(line 5, column 2\)$",
                kubectl_error=r"yaml: line [0-9]+")


@case
def exec_plugin_prints_json_with_a_repeated_key(ctx):
    """client-go's JSON decoding keeps the last value (kubectl is seen as bob); the plugin refuses the
    ambiguous credential, naming the key and not its value."""
    output = '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", ' \
             '"status": {"token": "%s", "token": "%s"}}' % (ctx.token("carol@example.com"), ctx.token("bob@example.com"))
    return Case("", PLUGIN_REFUSES, kubeconfig_env=_exec_printing(ctx, output),
                plugin_error=r"exec plugin .*: decoding stdout: duplicate key status\.token$", kubectl_user="bob@example.com")


@case
def unbracketed_ipv6_server(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, server="v6")
    config["clusters"][0]["cluster"]["server"] = "https://::1:%d" % ctx.servers.v6.port
    return Case("", BOTH_REFUSE, server="v6", kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^host must be a URL or a host:port pair", kubectl_error=r"host must be a URL")


@case
def certificate_name_only_in_cn(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "cn")}, server="cn")
    return Case("", BOTH_REFUSE, server="cn", kubeconfig_env=ctx.write("config", config),
                plugin_error=r"certificate of server .* is not trusted", kubectl_error=r"x509")


# ---------------------------------------------------------------------------------------------
# Credentials and TLS


@case
def token_file_with_trailing_newline(ctx):
    ctx.write("token", ctx.token("bob@example.com") + "\n")
    config = single(ctx, {"tokenFile": ctx.path("token")})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def token_file_wins_over_token(ctx):
    ctx.write("token", "  %s\n\n" % ctx.token("bob@example.com"))
    config = single(ctx, {"tokenFile": ctx.path("token"), "token": ctx.token("mallory@example.com")})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def relative_paths_run_from_root(ctx):
    ctx.write("team/certs/ca.crt", open(ctx.main.ca_file).read())
    ctx.write("tok", ctx.token("carol@example.com") + "\n")
    config = kubeconfig({"c": {"server": ctx.main.url, "certificate-authority": "certs/ca.crt"}},
                        {"u": {"tokenFile": "../tok"}}, {"ctx": ("c", "u")}, "ctx")
    return Case("", SAME, kubeconfig_env=ctx.write("team/config", config), cwd="/")


@case
def relative_exec_command_run_from_root(ctx):
    ctx.write("team/certs/ca.crt", open(ctx.main.ca_file).read())
    ctx.exec_script("get-token", ctx.token("bob@example.com"), "client.authentication.k8s.io/v1",
                    folder=ctx.path("team", "bin"))
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/get-token", "interactiveMode": "Never",
             "args": None, "env": None}
    config = kubeconfig({"c": {"server": ctx.main.url, "certificate-authority": "certs/ca.crt"}},
                        {"u": {"exec": exec_, "username": None}}, {"ctx": ("c", "u")}, "ctx")
    return Case("", SAME, kubeconfig_env=ctx.write("team/config", config), cwd="/")


@case
def client_key_pkcs8_rsa(ctx):
    cert, key = ctx.cert_data(key_format="pkcs8")
    return Case("", SAME, kubeconfig_env=ctx.write("config", single(ctx, {"client-certificate-data": cert,
                                                                          "client-key-data": key})))


@case
def client_key_pkcs8_ec(ctx):
    cert, key = ctx.cert_data(key_type="ec", key_format="pkcs8")
    return Case("", SAME, kubeconfig_env=ctx.write("config", single(ctx, {"client-certificate-data": cert,
                                                                          "client-key-data": key})))


@case
def basic_auth_utf8(ctx):
    config = single(ctx, {"username": JURGEN, "password": JURGEN_PASSWORD}, server="special")
    return Case("", SAME, server="special", kubeconfig_env=ctx.write("config", config))


@case
def impersonation(ctx):
    user = {"token": ctx.token("admin"), "as": "alice@example.com", "as-uid": "1234",
            "as-groups": ["aicr-approvers", "team a"],
            "as-user-extra": {"example.com/scopes": ["view", "approve"], "reason code%": ["maintenance"]}}
    return Case("", SAME, kubeconfig_env=ctx.write("config", single(ctx, user)))


@case
def insecure_skip_tls_verify_without_ca(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, **{"certificate-authority-data": None,
                                                                     "insecure-skip-tls-verify": True})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def ca_bundle_of_several_certificates(ctx):
    other = certs.make_ca().cert_pem.bytes().decode()
    bundle = other + open(ctx.main.ca_file).read() + other
    config = single(ctx, {"token": ctx.token("bob@example.com")},
                    **{"certificate-authority-data": base64.b64encode(bundle.encode()).decode()})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def ca_data_wrapped_at_64_columns(ctx):
    data = ctx.ca_data()
    wrapped = "\n".join("      " + data[i:i + 64] for i in range(0, len(data), 64))
    text = ("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
            "    certificate-authority-data: |\n%s\nusers:\n- name: u\n  user:\n    token: %s\n"
            "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\ncurrent-context: ctx\n"
            % (ctx.main.url, wrapped, ctx.token("bob@example.com")))
    return Case("", SAME, kubeconfig_env=ctx.write("config", text))


@case
def tls_server_name_for_an_ip_server(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "sni")}, server="sni",
                    **{"tls-server-name": SNI_NAME})
    return Case("", SAME, server="sni", kubeconfig_env=ctx.write("config", config))


@case
def server_port_of_5000_digits(ctx):
    # Go's net.parsePort reads the leading zeros; Python's int() refuses a string of over 4,300 digits.
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:%05000d" % ctx.main.port
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def proxy_url_port_of_5000_digits(ctx):
    proxy = ctx.servers.http_proxy.url.rpartition(":")
    config = single(ctx, {"token": ctx.token("bob@example.com")}, **{"proxy-url": "%s:%05000d" % (
        proxy[0], int(proxy[2].strip("/")))})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config), proxy="http")


# tls-server-name is used as written (Go never converts it): SNI by crypto/tls hostnameInSNI (no trailing dots;
# none for an IP), verified by crypto/x509 VerifyHostname (a name that is not a valid host name matches a DNS
# SAN only exactly). Names Python's ssl refuses as server_hostname once ended the plugin with exit 70.
def _tls_server_name(ctx, name, server="main"):
    return ctx.write("config", single(ctx, {"token": ctx.token("bob@example.com", server)}, server=server,
                                      **{"tls-server-name": name}))


def _name_refused(ctx, name):
    return Case("", BOTH_REFUSE, kubeconfig_env=_tls_server_name(ctx, name),
                plugin_error=r"is not trusted: x509: certificate is valid for localhost, not ",
                kubectl_error=r"tls: |x509: ")


@case
def tls_server_name_nul(ctx):
    return _name_refused(ctx, "\0")


@case
def tls_server_name_dot(ctx):
    return _name_refused(ctx, ".")


@case
def tls_server_name_two_dots(ctx):
    return _name_refused(ctx, "..")


@case
def tls_server_name_ideographic_full_stop(ctx):
    return _name_refused(ctx, "\u3002")


@case
def tls_server_name_zero_width_space(ctx):
    return _name_refused(ctx, "\u200b")


@case
def tls_server_name_dot_without_verification(ctx):
    # Nothing is verified: kubectl connects (SNI: none, "." without its dot), and so must the plugin.
    config = single(ctx, {"token": ctx.token("bob@example.com")}, **{
        "tls-server-name": ".", "insecure-skip-tls-verify": True, "certificate-authority-data": None})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def tls_server_name_with_a_trailing_dot(ctx):
    # kubectl sends SNI "localhost" and verifies "localhost." as "localhost".
    return Case("", SAME, kubeconfig_env=_tls_server_name(ctx, "localhost."))


@case
def tls_server_name_matched_only_exactly(ctx):
    return Case("", SAME, server="odd", kubeconfig_env=_tls_server_name(ctx, DOTS, "odd"))


@case
def tls_server_name_internationalized_is_not_converted(ctx):
    # The certificate is for the name's IDNA form: kubectl compares the name as written, and refuses.
    return Case("", BOTH_REFUSE, server="odd", kubeconfig_env=_tls_server_name(ctx, IDN_HOST, "odd"),
                plugin_error=r"is not trusted: x509: certificate is valid for \.\., xn--bcher-kva\.example, not "
                             r"b\u00fccher\.example", kubectl_error=r"tls: ")


@case
def server_host_internationalized_goes_out_in_its_idna_form(ctx):
    # net/http dials, CONNECTs to, names in TLS and sends as Host the host's IDNA ASCII form.
    config = single(ctx, {"token": ctx.token("bob@example.com", "odd")}, server="odd")
    config["clusters"][0]["cluster"]["server"] = "https://%s:%d" % (IDN_HOST, ctx.servers.odd.port)
    return Case("", SAME, server="odd", kubeconfig_env=ctx.write("config", config), proxy="http",
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url})


@case
def server_host_without_an_idna_form(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["clusters"][0]["cluster"]["server"] = "https://\u3002:%d" % ctx.main.port
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"its host has no IDNA \(ASCII\) form", kubectl_error=r"lookup \.|no such host")


@case
def ipv6_server(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "v6")}, server="v6")
    return Case("", SAME, server="v6", kubeconfig_env=ctx.write("config", config))


# ---------------------------------------------------------------------------------------------
# Proxies


@case
def proxy_url_ignores_no_proxy(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, **{"proxy-url": ctx.servers.http_proxy.url})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config), env={"NO_PROXY": "127.0.0.1"},
                proxy="http")


@case
def proxy_url_socks5(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, **{"proxy-url": ctx.servers.socks_proxy.url})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config), proxy="socks5")


def _named(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "special")}, server="special")
    config["clusters"][0]["cluster"]["server"] = "https://%s:%d" % (NAMED_HOST, ctx.servers.special.port)
    return ctx.write("config", config)


@case
def https_proxy_environment(ctx):
    return Case("", SAME, server="special", kubeconfig_env=_named(ctx), proxy="http",
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url, "NO_PROXY": "localhost,.svc,10.0.0.0/8"})


@case
def https_proxy_uppercase_first(ctx):
    return Case("", SAME, server="special", kubeconfig_env=_named(ctx), proxy="http",
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url.replace("http://", ""),
                     "https_proxy": "http://127.0.0.1:1"})


@case
def loopback_never_proxied(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    return Case("", SAME, kubeconfig_env=ctx.write("config", config),
                env={"HTTPS_PROXY": "http://127.0.0.1:1", "NO_PROXY": ""})


@case
def no_proxy_domain_bypasses_the_proxy(ctx):
    return Case("", BOTH_REFUSE, server="special", kubeconfig_env=_named(ctx),
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url, "NO_PROXY": "example.invalid"},
                plugin_error=r"cannot resolve the host of server https://api\.example\.invalid",
                kubectl_error=r"api\.example\.invalid")


def _by_address(ctx):
    if not ctx.servers.host_ip:
        pytest.skip("this machine has no non-loopback IPv4 address")
    config = single(ctx, {"token": ctx.token("bob@example.com", "special")}, server="special")
    config["clusters"][0]["cluster"]["server"] = "https://%s:%d" % (ctx.servers.host_ip, ctx.servers.special.port)
    return ctx.write("config", config)


@case
def https_proxy_for_an_ip_server(ctx):
    return Case("", SAME, server="special", kubeconfig_env=_by_address(ctx), proxy="http",
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url, "NO_PROXY": "203.0.113.0/24,localhost"})


@case
def no_proxy_cidr_bypasses_the_proxy(ctx):
    path = _by_address(ctx)
    return Case("", BOTH_REFUSE, server="special", kubeconfig_env=path,
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url, "NO_PROXY": ctx.servers.host_ip + "/24"},
                plugin_error=r"cannot connect to server https://[0-9.]+:\d+: connection refused",
                kubectl_error=r"was refused")


# ---------------------------------------------------------------------------------------------
# Trust anchors as Go's x509.CertPool: every certificate of the CA data is trusted wherever it sits in the
# server's chain; PEM blocks that are not certificates are skipped (crypto/x509 AppendCertsFromPEM).


def _pem(path):
    with open(path) as handle:
        return handle.read()


def _ca_data_text(ctx, text, server="main"):
    config = single(ctx, {"token": ctx.token("bob@example.com", server)}, server=server,
                    **{"certificate-authority-data": base64.b64encode(text.encode()).decode()})
    return ctx.write("config", config)


@case
def ca_data_is_the_servers_own_certificate(ctx):
    return Case("", SAME, kubeconfig_env=_ca_data_text(ctx, _pem(ctx.main.server_cert.cert)))


@case
def ca_data_is_the_servers_own_certificate_sent_with_its_ca(ctx):
    end = "-----END CERTIFICATE-----\n"
    leaf = _pem(ctx.servers.chain.server_cert.cert).split(end)[0] + end
    return Case("", SAME, server="chain", kubeconfig_env=_ca_data_text(ctx, leaf, "chain"))


@case
def ca_file_is_the_servers_own_certificate(ctx):
    ctx.write("pinned.crt", _pem(ctx.main.server_cert.cert))
    config = kubeconfig({"c": {"server": ctx.main.url, "certificate-authority": "pinned.crt"}},
                        {"u": {"token": ctx.token("bob@example.com")}}, {"ctx": ("c", "u")}, "ctx")
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def ca_data_with_blocks_that_are_not_certificates(ctx):
    junk = ("# the cluster CA\n-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n"
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    return Case("", SAME, kubeconfig_env=_ca_data_text(ctx, junk + _pem(ctx.main.ca_file) + "trailing text\n"))


@case
def ca_data_of_a_private_key_only(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_ca_data_text(
        ctx, "-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n"),
        plugin_error=r"^unable to load root certificates: the certificate-authority-data of cluster c holds no usable "
                     r"PEM CERTIFICATE block \(other blocks, and blocks with headers, are skipped\)$",
        kubectl_error=r"unable to load root certificates: no valid certificate authority data seen")


@case
def ca_data_of_a_broken_certificate_only(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_ca_data_text(
        ctx, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        plugin_error=r"certificate-authority-data of cluster c holds a CERTIFICATE block that is not a valid",
        kubectl_error=r"unable to load root certificates: failed to parse certificate")


@case
def ca_data_that_is_not_pem(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_ca_data_text(ctx, "not a certificate\n"),
                plugin_error=r"certificate-authority-data of cluster c holds no PEM block$",
                kubectl_error=r"unable to load root certificates: unable to parse bytes as PEM block")


@case
def ca_data_of_another_ca_is_refused(ctx):
    return Case("", BOTH_REFUSE, kubeconfig_env=_ca_data_text(ctx, certs.make_ca().cert_pem.bytes().decode()),
                plugin_error=r"certificate of server .* is not trusted", kubectl_error=r"x509: certificate signed by")


# ---------------------------------------------------------------------------------------------
# The same bytes on the wire: a host name is sent as written (TLS server name, Host header, CONNECT target),
# as Go's net/http sends an EKS endpoint written in upper-case hex.


@case
def upper_case_host_name(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["clusters"][0]["cluster"]["server"] = "https://LOCALHOST:%d" % ctx.main.port
    return Case("", SAME, kubeconfig_env=ctx.write("config", config))


@case
def mixed_case_host_name_with_a_path_prefix_through_a_proxy(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com", "special")}, server="special")
    config["clusters"][0]["cluster"]["server"] = "https://%s:%d%s" % (NAMED_HOST_MIXED_CASE, ctx.servers.special.port,
                                                                      PREFIX)
    return Case("", SAME, server="special", kubeconfig_env=ctx.write("config", config), proxy="http",
                env={"HTTPS_PROXY": ctx.servers.http_proxy.url})


# ---------------------------------------------------------------------------------------------
# What kubectl refuses or prompts for, found by running client-go's clientcmd tables through both


def _extensions(*names):
    return [{"name": name, "extension": {"n": index}} for index, name in enumerate(names)]


@case
def duplicate_top_level_extension_names(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, extensions=None)
    config["extensions"] = _extensions("example.com/a", "example.com/a")
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r'duplicate name "example\.com/a" in extensions$',
                kubectl_error=r'duplicate name "example\.com/a" in list')


@case
def duplicate_extension_names_in_an_unused_user(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")})
    config["users"].append({"name": "other", "user": {"token": "x", "extensions": _extensions("", "")}})
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r'users\[1\]: user: duplicate name "" in extensions$',
                kubectl_error=r'duplicate name "" in list')


@case
def duplicate_extension_names_in_the_cluster(ctx):
    config = single(ctx, {"token": ctx.token("bob@example.com")}, extensions=_extensions("x", "z", "x"))
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r'clusters\[0\]: cluster: duplicate name "x" in extensions$',
                kubectl_error=r'duplicate name "x" in list')


PROMPT = r"Please enter Username"


@case
def user_without_credentials(ctx):
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", single(ctx, {}, user_name="approver")),
                kubectl_error=PROMPT, plugin_error=r'^user "approver" has no credentials \(nothing;.*never prompts$')


@case
def user_with_only_impersonation(ctx):
    user = {"as": "alice@example.com", "as-groups": ["aicr-approvers"]}
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", single(ctx, user)), kubectl_error=PROMPT,
                plugin_error=r'^user "u" has no credentials \(only impersonation settings')


@case
def user_with_only_a_password(ctx):
    return Case("", FALLBACK, kubeconfig_env=ctx.write("config", single(ctx, {"password": "x"}, server="special")),
                server="special", kubectl_error=PROMPT, plugin_error=r'^user "u" has no credentials \(only a password')


@case
def missing_client_key_file_and_missing_ca_file(ctx):
    cert = ctx.main.client_cert_files("alice@example.com")
    config = kubeconfig({"c": {"server": ctx.main.url, "certificate-authority": ctx.path("gone", "ca.crt")}},
                        {"u": {"client-certificate": cert.cert, "client-key": ctx.path("gone", "client.key")}},
                        {"ctx": ("c", "u")}, "ctx")
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", config),
                plugin_error=r"^invalid configuration, 2 problems: \(1\) unable to read client-key .*/gone/client\.key "
                             r"for u due to open .*: no such file or directory; \(2\) unable to read "
                             r"certificate-authority .*/gone/ca\.crt for c due to open .*: no such file or directory$",
                kubectl_error=r"(?s)unable to read client-key .*unable to read certificate-authority")


@case
def client_key_and_client_key_data_and_two_methods(ctx):
    cert = ctx.main.client_cert_files("alice@example.com")
    _, key = ctx.cert_data()
    user = {"client-certificate": cert.cert, "client-key": cert.key, "client-key-data": key,
            "token": ctx.token("bob@example.com"), "username": "bob", "password": "x"}
    return Case("", BOTH_REFUSE, kubeconfig_env=ctx.write("config", single(ctx, user)),
                plugin_error=r"^invalid configuration, 2 problems: \(1\) client-key-data and client-key are both "
                             r"specified for u; .*\(2\) more than one authentication method found for u; found "
                             r"\[token basicAuth\], only one is allowed$",
                kubectl_error=r"(?s)client-key-data and client-key are both.*more than one authentication method")


# ---------------------------------------------------------------------------------------------
# proxy-url https://: TLS to the proxy with the cluster's TLS settings (Go's Transport.dialConn), then CONNECT


def _via_https_proxy(ctx, ca_files=(), user=None, **cluster):
    ctx.servers.https_proxy.trust_client_ca(ctx.main.ca_file)
    cert, key = ctx.cert_data()
    bundle = "".join(_pem(path) for path in ca_files)
    settings = {"proxy-url": ctx.servers.https_proxy.url,
                "certificate-authority-data": base64.b64encode(bundle.encode()).decode() if bundle else None}
    settings.update(cluster)
    config = single(ctx, user or {"client-certificate-data": cert, "client-key-data": key}, **settings)
    return ctx.write("config", config)


@case
def https_proxy_url_trusted_by_the_kubeconfig_ca(ctx):
    path = _via_https_proxy(ctx, (ctx.servers.proxy_ca_file, ctx.main.ca_file))
    return Case("", SAME, kubeconfig_env=path, proxy="https")


@case
def https_proxy_url_verified_for_the_tls_server_name(ctx):
    path = _via_https_proxy(ctx, (ctx.servers.proxy_ca_file, ctx.main.ca_file), **{"tls-server-name": "localhost"})
    return Case("", SAME, kubeconfig_env=path, proxy="https")


@case
def https_proxy_url_with_the_system_trust_store(ctx):
    bundle = ctx.write("system-cas.pem", _pem(ctx.servers.proxy_ca_file) + _pem(ctx.main.ca_file))
    path = _via_https_proxy(ctx, (), user={"token": ctx.token("bob@example.com")})
    return Case("", SAME, kubeconfig_env=path, proxy="https", env={"SSL_CERT_FILE": bundle})


@case
def https_proxy_url_under_insecure_skip_tls_verify(ctx):
    path = _via_https_proxy(ctx, (), user={"token": ctx.token("bob@example.com")}, **{"insecure-skip-tls-verify": True})
    return Case("", SAME, kubeconfig_env=path, proxy="https")


@case
def https_proxy_url_not_trusted_by_the_kubeconfig_ca(ctx):
    bundle = ctx.write("system-cas.pem", _pem(ctx.servers.proxy_ca_file))
    return Case("", BOTH_REFUSE, kubeconfig_env=_via_https_proxy(ctx, (ctx.main.ca_file,)),
                env={"SSL_CERT_FILE": bundle},  # the system's CAs would trust it: they are not asked
                plugin_error=r"^TLS: the certificate of proxy https://127\.0\.0\.1:\d+ \(proxy-url of cluster 'c'\) is "
                             r"not trusted", kubectl_error=r"proxyconnect tcp: tls: failed to verify certificate")


@case
def https_proxy_from_the_environment(ctx):
    bundle = ctx.write("system-cas.pem", _pem(ctx.servers.proxy_ca_file) + _pem(ctx.servers.special.ca_file))
    config = single(ctx, {"token": ctx.token("bob@example.com", "special")}, server="special",
                    **{"certificate-authority-data": None})
    config["clusters"][0]["cluster"]["server"] = "https://%s:%d" % (NAMED_HOST, ctx.servers.special.port)
    return Case("", SAME, server="special", kubeconfig_env=ctx.write("config", config), proxy="https",
                env={"HTTPS_PROXY": ctx.servers.https_proxy.url_for("localhost"), "SSL_CERT_FILE": bundle})
