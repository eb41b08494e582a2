"""Checks of the chosen cluster and user, with kubectl's own words, before anything is sent or run.

What client-go refuses for the entries a command uses (``tools/clientcmd/validation.go``
``validateClusterInfo`` and ``validateAuthInfo``, the transport checks of
``transport/round_trippers.go`` ``HTTPWrappersForConfig`` and ``transport/transport.go``
``TLSConfigFor``, the exec apiVersion check of ``plugin/pkg/client/auth/exec/exec.go``,
and the auth-provider registry of ``rest/plugin.go`` with the removal stubs of
``plugin/pkg/client/auth/gcp`` and ``azure``), raised here as one ConfigError each.

Where kubectl would carry on silently the plugin stops instead: a cluster without a
server (kubectl: ``http://localhost:8080``), a client key without a certificate
(kubectl ignores the key).
"""

from .errors import ConfigError

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")

# The removal messages of client-go's gcp and azure auth-provider stubs (one line each here).
REMOVED_AUTH_PROVIDERS = {
    "gcp": 'The gcp auth plugin has been removed. Please use the "gke-gcloud-auth-plugin" kubectl/client-go '
           "credential plugin instead. See https://cloud.google.com/blog/products/containers-kubernetes/"
           "kubectl-auth-changes-in-gke for further details",
    "azure": "The azure auth plugin has been removed. Please use the https://github.com/Azure/kubelogin "
             "kubectl/client-go credential plugin instead. See https://kubernetes.io/docs/reference/"
             "access-authn-authz/authentication/#client-go-credential-plugins for further details",
}


def check(selection):
    """Raise ConfigError for the first problem of ``selection``'s cluster or user, else return None."""
    check_cluster(selection.cluster)
    if selection.user is not None:
        check_user(selection.user)


def _unreadable(path):
    """Go's ``open PATH: <reason>`` when ``path`` cannot be opened for reading, else None."""
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        reason = (exc.strerror or str(exc))
        return "open %s: %s" % (path, reason[:1].lower() + reason[1:])


def check_cluster(cluster):
    name = cluster.name
    if not cluster.server:
        raise ConfigError('no server found for cluster "%s" (kubectl would fall back to http://localhost:8080)'
                          % name)
    if cluster.proxy_url:
        from . import proxy

        proxy.parse_proxy_url(cluster.proxy_url, name)
    if cluster.certificate_authority and cluster.certificate_authority_data:
        raise ConfigError("certificate-authority-data and certificate-authority are both specified for %s. "
                          "certificate-authority-data will override." % name)
    if cluster.certificate_authority:
        problem = _unreadable(cluster.certificate_authority)
        if problem:
            raise ConfigError("unable to read certificate-authority %s for %s due to %s"
                              % (cluster.certificate_authority, name, problem))
    has_ca = bool(cluster.certificate_authority or cluster.certificate_authority_data)
    if cluster.insecure_skip_tls_verify and has_ca:
        raise ConfigError("specifying a root certificates file with the insecure flag is not allowed "
                          "(cluster %s sets insecure-skip-tls-verify and a certificate-authority)" % name)


def check_user(user):
    _check_methods(user)
    _check_client_certificate(user)
    if user.exec is not None:
        _check_exec(user)
    if user.auth_provider is not None:
        _check_auth_provider(user)
    if (user.impersonate_uid or user.impersonate_groups or user.impersonate_extra) and not user.impersonate:
        raise ConfigError("requesting uid, groups or user-extra for %s without impersonating a user" % user.name)


def _check_methods(user):
    methods = (["token"] if user.token else []) + (["basicAuth"] if user.username or user.password else [])
    if len(methods) > 1:
        raise ConfigError("more than one authentication method found for %s; found [%s], only one is allowed"
                          % (user.name, " ".join(methods)))
    if user.token_file and (user.username or user.password):
        raise ConfigError("username/password or bearer token may be set, but not both (user %s has tokenFile "
                          "and basic auth)" % user.name)


def _check_client_certificate(user):
    name = user.name
    has_cert = bool(user.client_certificate or user.client_certificate_data)
    has_key = bool(user.client_key or user.client_key_data)
    if not has_cert:
        if has_key:
            raise ConfigError("client-key-data or client-key is set for %s without client-certificate-data or "
                              "client-certificate (kubectl would ignore the key)" % name)
        return
    if user.client_certificate and user.client_certificate_data:
        raise ConfigError("client-cert-data and client-cert are both specified for %s. client-cert-data will "
                          "override." % name)
    if user.client_key and user.client_key_data:
        raise ConfigError("client-key-data and client-key are both specified for %s; client-key-data will override"
                          % name)
    if not has_key:
        raise ConfigError("client-key-data or client-key must be specified for %s to use the clientCert "
                          "authentication method." % name)
    for path, what in ((user.client_certificate, "client-cert"), (user.client_key, "client-key")):
        problem = path and _unreadable(path)
        if problem:
            raise ConfigError("unable to read %s %s for %s due to %s" % (what, path, name, problem))


def _check_exec(user):
    name, spec = user.name, user.exec
    if user.auth_provider is not None:
        raise ConfigError("authProvider cannot be provided in combination with an exec plugin for %s" % name)
    if not spec.command:
        raise ConfigError("command must be specified for %s to use exec authentication plugin" % name)
    if not spec.api_version:
        raise ConfigError("apiVersion must be specified for %s to use exec authentication plugin" % name)
    if any(not variable for variable, _ in spec.env):
        raise ConfigError("env variable name must be specified for %s to use exec authentication plugin" % name)
    if not spec.interactive_mode:
        raise ConfigError("interactiveMode must be specified for %s to use exec authentication plugin" % name)
    if spec.interactive_mode not in INTERACTIVE_MODES:
        raise ConfigError('invalid interactiveMode for %s: "%s"' % (name, spec.interactive_mode))
    if spec.api_version not in EXEC_API_VERSIONS:
        raise ConfigError('exec plugin: invalid apiVersion "%s" (user %s; use %s)'
                          % (spec.api_version, name, " or ".join(EXEC_API_VERSIONS)))


def _check_auth_provider(user):
    provider = user.auth_provider
    if provider.name in REMOVED_AUTH_PROVIDERS:
        raise ConfigError(REMOVED_AUTH_PROVIDERS[provider.name])
    if provider.name != "oidc":
        raise ConfigError('no Auth Provider found for name "%s" (user %s)' % (provider.name, user.name))
    for key in ("idp-issuer-url", "client-id"):
        if not provider.config.get(key):
            raise ConfigError("Must provide %s (auth-provider oidc of user %s)" % (key, user.name))
