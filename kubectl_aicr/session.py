"""From a parsed command line to a connected API client: kubeconfig -> context -> credentials -> transport.

The one place that joins the kubeconfig, auth and transport modules, so that
commands receive a ready :class:`~kubectl_aicr.transport.Client` and never build
URLs, headers or TLS settings themselves.
"""

import contextlib

from . import auth, kubeconfig, transport


@contextlib.contextmanager
def connect(invocation, deadline=None):
    """Yield a :class:`transport.Client` for ``invocation`` (its --kubeconfig and --context).

    ``deadline``: a :class:`transport.Deadline` (default: a new 30-second one).

    Credential material that must live in files (``client-key-data``) is kept in a
    private temporary folder that is removed when the block ends, on every exit path.
    Raises ConfigError, AuthError as those modules do.
    """
    config = kubeconfig.load(invocation.kubeconfig)
    selection = kubeconfig.select(config, invocation.context)
    with auth.SecretFiles() as secrets:
        credentials = auth.credentials(selection.user, secrets)
        client = transport.Client(selection.cluster, credentials, deadline)
        try:
            yield client
        finally:
            client.close()
