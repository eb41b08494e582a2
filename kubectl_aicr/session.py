"""From a parsed command line to a connected API client: kubeconfig -> context -> credentials -> transport.

The one place that joins the kubeconfig, auth and transport modules, so that
commands receive a ready :class:`~kubectl_aicr.transport.Client` and never build
URLs, headers or TLS settings themselves.
"""

import contextlib

from . import auth, kubeconfig, transport


@contextlib.contextmanager
def connect(invocation, deadline=None, environ=None):
    """Yield a :class:`transport.Client` for ``invocation`` (its --kubeconfig and --context).

    ``deadline``: a :class:`transport.Deadline` (default: a new 30-second one, started
    here); ``environ``: the environment (default ``os.environ``). The deadline bounds
    every request and every run of an exec credential plugin. Credential material that must live in files
    (``client-key-data``, an exec plugin's key) is written to a private temporary
    folder only while a TLS context loads it, and the folder is removed when the block
    ends, on every exit path. Raises ConfigError, AuthError as those modules do.
    """
    deadline = deadline or transport.Deadline()
    config = kubeconfig.load(invocation.kubeconfig, environ)
    selection = kubeconfig.select(config, invocation.context, environ)
    with auth.SecretFiles() as secrets:
        authenticator = auth.Authenticator(selection.user, selection.cluster, deadline, environ)
        client = transport.Client(selection.cluster, authenticator, deadline, secrets, environ)
        try:
            yield client
        finally:
            client.close()
