"""From a parsed command line to a connected API client: kubeconfig -> context -> RESTConfig -> client.

The one place that joins the kubeconfig, auth and rest modules (client-go ``tools/clientcmd``
``DirectClientConfig``): the selected cluster and AuthInfo, with the command line's overrides, become one
:class:`~kubectl_aicr.kube.rest.RESTConfig` (:func:`rest_config`), so that commands receive a ready
:class:`~kubectl_aicr.kube.rest.Client` and never build URLs, headers or TLS settings themselves.
"""

import contextlib

from . import auth, kubeconfig, rest, validation


@contextlib.contextmanager
def connect(invocation, deadline=None, environ=None):
    """Yield a :class:`rest.Client` for ``invocation`` (its --kubeconfig and --context).

    ``--as``, ``--as-group`` and ``--as-uid`` replace the user's ``as``, ``as-groups`` and ``as-uid``
    (:func:`impersonated`; ConfigError for groups or a UID without a user, as kubectl). ``deadline``: a :class:`rest.Deadline` (default: a new 30-second one, started
    here); ``environ``: the environment (default ``os.environ``). The deadline bounds
    every request and every run of an exec credential plugin. Credential material ``ssl`` must read from a
    path (``client-key-data``, an exec plugin's key) goes through :class:`auth.SecretFiles`: a memory file
    on Linux, else a private temporary folder only while a TLS context loads it; either is freed when
    the block ends, on every exit path. Raises ConfigError, AuthError as those modules do.
    """
    deadline = deadline or rest.Deadline()
    config = kubeconfig.load(invocation.kubeconfig, environ)
    selection = kubeconfig.select(config, invocation.context, environ)
    user = impersonated(selection.auth_info, invocation)
    settings = rest_config(selection.cluster, user)
    with auth.SecretFiles() as secrets:
        authenticator = auth.Authenticator(user, selection.cluster, deadline, environ)
        client = rest.Client(settings, authenticator, deadline, secrets, environ)
        try:
            yield client
        finally:
            client.close()


def impersonated(user, invocation):
    """``user`` (a kubeconfig.AuthInfo or None) with the command line's impersonation flags applied.

    As kubectl (client-go ``clientcmd`` overrides merged over the AuthInfo, then
    ``getUserIdentificationPartialConfig``): each flag given replaces its own kubeconfig field
    (``--as`` the ``as``, ``--as-group`` all of ``as-groups``, ``--as-uid`` the ``as-uid``); fields
    not given on the command line keep the kubeconfig's values.
    """
    as_user = getattr(invocation, "as_user", None)
    as_groups = getattr(invocation, "as_groups", None)
    as_uid = getattr(invocation, "as_uid", None)
    if not (as_user or as_groups or as_uid):
        return user
    base = user if user is not None else kubeconfig.AuthInfo(name="")
    merged = base._replace(impersonate=as_user or base.impersonate,
                           impersonate_groups=tuple(as_groups) if as_groups else base.impersonate_groups,
                           impersonate_uid=as_uid or base.impersonate_uid)
    validation.check_user(merged)  # as clientcmd validates the merged AuthInfo: no groups/uid without a user
    return merged


def rest_config(cluster, user):
    """The :class:`~kubectl_aicr.kube.rest.RESTConfig` of a validated cluster entry and AuthInfo (``user``:
    a kubeconfig.AuthInfo, impersonation flags applied, or None), as client-go ``DirectClientConfig.ClientConfig``
    builds a ``rest.Config``. AuthError for an impersonation value that cannot go into a header."""
    impersonate = rest.Impersonation()
    if user is not None:
        impersonate = rest.Impersonation(user.impersonate, user.impersonate_uid, tuple(user.impersonate_groups),
                                         tuple(user.impersonate_extra))
        for header, value in rest.impersonation_headers(impersonate):
            auth.check_header_value(value, "the %s of user %s" % (header, user.name))
    return rest.RESTConfig(host=cluster.server, cluster_name=cluster.name,
                           insecure=cluster.insecure_skip_tls_verify, ca_file=cluster.certificate_authority,
                           ca_data=cluster.certificate_authority_data, server_name=cluster.tls_server_name,
                           proxy_url=cluster.proxy_url, impersonate=impersonate)
