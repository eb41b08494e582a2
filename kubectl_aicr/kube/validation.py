"""Checks of the chosen cluster and user, with kubectl's own words, before anything is sent or run.

What client-go refuses for the entries a command uses (``tools/clientcmd/validation.go``
``validateClusterInfo`` and ``validateAuthInfo``, the transport checks of
``transport/round_trippers.go`` ``HTTPWrappersForConfig`` and ``transport/transport.go``
``TLSConfigFor``, the exec apiVersion check of ``plugin/pkg/client/auth/exec/exec.go``,
and the auth-provider registry of ``rest/plugin.go`` with the removal stubs of
``plugin/pkg/client/auth/gcp`` and ``azure``). Every problem of the chosen user and cluster is
reported in one ConfigError, as kubectl lists them all ("Error in configuration: * ... * ...").

Where kubectl would carry on silently the plugin stops instead: a cluster without a
server (kubectl: ``http://localhost:8080``), a client key without a certificate
(kubectl ignores the key), and a user with no credentials at all, or only impersonation
settings (kubectl prompts for a username and password; a plugin never prompts).
"""

from ..errors import ConfigError

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
    """Raise one ConfigError naming every problem of ``selection``'s user and cluster (in kubectl's order: the
    user's, then the cluster's, as ``DirectClientConfig.ConfirmUsable`` lists them), else return None."""
    _raise((user_problems(selection.auth_info) if selection.auth_info is not None else []) +
           cluster_problems(selection.cluster))


def check_user(user):
    """Raise one ConfigError naming every problem of ``user`` (an AuthInfo with the command line's
    impersonation flags merged in, as clientcmd validates the merged AuthInfo), else return None."""
    _raise(user_problems(user))


def _raise(problems):
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError("invalid configuration, %d problems: %s"
                          % (len(problems), " ".join("(%d) %s;" % (n, p) for n, p in enumerate(problems, 1))[:-1]))


def _unreadable(path):
    """Go's ``open PATH: <reason>`` when ``path`` cannot be opened for reading, else None."""
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        reason = (exc.strerror or str(exc))
        return "open %s: %s" % (path, reason[:1].lower() + reason[1:])
    except ValueError:  # a NUL in the path (Python's "embedded null byte"): Go's open fails with EINVAL
        return "open %s: invalid argument" % path


def cluster_problems(cluster):
    """Every problem of a cluster entry, as messages (``validateClusterInfo``, then the TLS config's check)."""
    name, problems = cluster.name, []
    if not cluster.server:
        problems.append('no server found for cluster "%s" (kubectl would fall back to http://localhost:8080)' % name)
    if cluster.proxy_url:
        from . import proxy_rules

        try:
            proxy_rules.parse_proxy_url(cluster.proxy_url, name)
        except ConfigError as exc:
            problems.append(str(exc))
    if cluster.certificate_authority and cluster.certificate_authority_data:
        problems.append("certificate-authority-data and certificate-authority are both specified for %s. "
                        "certificate-authority-data will override." % name)
    if cluster.certificate_authority:
        problem = _unreadable(cluster.certificate_authority)
        if problem:
            problems.append("unable to read certificate-authority %s for %s due to %s"
                            % (cluster.certificate_authority, name, problem))
    has_ca = bool(cluster.certificate_authority or cluster.certificate_authority_data)
    if cluster.insecure_skip_tls_verify and has_ca:
        problems.append("specifying a root certificates file with the insecure flag is not allowed "
                        "(cluster %s sets insecure-skip-tls-verify and a certificate-authority)" % name)
    return problems


def user_problems(user):
    """Every problem of a user (AuthInfo) entry, as messages, in ``validateAuthInfo``'s order; then a user
    that cannot be identified at all, where kubectl would prompt for a username and password."""
    problems = _client_certificate_problems(user)
    if user.exec is not None:
        problems += _exec_problems(user)
    problems += _method_problems(user)
    if (user.impersonate_uid or user.impersonate_groups or user.impersonate_extra) and not user.impersonate:
        problems.append("requesting uid, groups or user-extra for %s without impersonating a user" % user.name)
    if user.auth_provider is not None and not problems:
        problems += _auth_provider_problems(user)
    if not problems and not identifies(user):
        problems.append(_no_credentials(user))
    return problems


def identifies(user):
    """client-go's ``canIdentifyUser``: a username, a client certificate, a bearer token (or token file), an
    auth-provider or an exec plugin. Without one kubectl prompts for a username and password."""
    return bool(user.username or user.client_certificate or user.client_certificate_data or user.token
                or user.token_file or user.auth_provider is not None or user.exec is not None)


def _no_credentials(user):
    has = "only a password" if user.password else \
        "only impersonation settings (as, as-groups, as-uid, as-user-extra)" if user.impersonate or \
        user.impersonate_groups or user.impersonate_uid or user.impersonate_extra else "nothing"
    return ('user "%s" has no credentials (%s; it needs a token, tokenFile, username and password, client '
            "certificate, exec plugin or auth-provider): kubectl would prompt for a username and password, "
            "kubectl-aicr never prompts" % (user.name, has))


def _method_problems(user):
    methods = (["token"] if user.token else []) + (["basicAuth"] if user.username or user.password else [])
    problems = []
    if len(methods) > 1:
        problems.append("more than one authentication method found for %s; found [%s], only one is allowed"
                        % (user.name, " ".join(methods)))
    if user.token_file and (user.username or user.password):
        problems.append("username/password or bearer token may be set, but not both (user %s has tokenFile "
                        "and basic auth)" % user.name)
    return problems


def _client_certificate_problems(user):
    name, problems = user.name, []
    has_cert = bool(user.client_certificate or user.client_certificate_data)
    has_key = bool(user.client_key or user.client_key_data)
    if not has_cert:
        if has_key:
            problems.append("client-key-data or client-key is set for %s without client-certificate-data or "
                            "client-certificate (kubectl would ignore the key)" % name)
        return problems
    if user.client_certificate and user.client_certificate_data:
        problems.append("client-cert-data and client-cert are both specified for %s. client-cert-data will "
                        "override." % name)
    if user.client_key and user.client_key_data:
        problems.append("client-key-data and client-key are both specified for %s; client-key-data will override"
                        % name)
    if not has_key:
        problems.append("client-key-data or client-key must be specified for %s to use the clientCert "
                        "authentication method." % name)
    for path, what in ((user.client_certificate, "client-cert"), (user.client_key, "client-key")):
        problem = path and _unreadable(path)
        if problem:
            problems.append("unable to read %s %s for %s due to %s" % (what, path, name, problem))
    return problems


def _exec_problems(user):
    name, spec, problems = user.name, user.exec, []
    if user.auth_provider is not None:
        problems.append("authProvider cannot be provided in combination with an exec plugin for %s" % name)
    if not spec.command:
        problems.append("command must be specified for %s to use exec authentication plugin" % name)
    if not spec.api_version:
        problems.append("apiVersion must be specified for %s to use exec authentication plugin" % name)
    for variable, _ in spec.env:
        if not variable:
            problems.append("env variable name must be specified for %s to use exec authentication plugin" % name)
    if not spec.interactive_mode:
        problems.append("interactiveMode must be specified for %s to use exec authentication plugin" % name)
    elif spec.interactive_mode not in INTERACTIVE_MODES:
        problems.append('invalid interactiveMode for %s: "%s"' % (name, spec.interactive_mode))
    if spec.api_version and spec.api_version not in EXEC_API_VERSIONS and not problems:
        problems.append('exec plugin: invalid apiVersion "%s" (user %s; use %s)'
                        % (spec.api_version, name, " or ".join(EXEC_API_VERSIONS)))
    return problems


def _auth_provider_problems(user):
    provider = user.auth_provider
    if provider.name in REMOVED_AUTH_PROVIDERS:
        return [REMOVED_AUTH_PROVIDERS[provider.name]]
    if provider.name != "oidc":
        return ['no Auth Provider found for name "%s" (user %s)' % (provider.name, user.name)]
    return ["Must provide %s (auth-provider oidc of user %s)" % (key, user.name)
            for key in ("idp-issuer-url", "client-id") if not provider.config.get(key)]
