"""The plugin's exception types, one per kind of failure.

Every error that reaches ``main`` is printed as one line, ``error: <message>``,
and ends the process with the exit code of its class. Messages never carry
secrets (tokens, passwords, key material): whoever raises one makes sure of it.
"""


class AicrError(Exception):
    """Base of every error the plugin reports to the user (exit status 1)."""

    exit_code = 1


class UsageError(AicrError):
    """Bad command line: unknown flag, missing argument, bad value (exit status 2).

    ``hints``: lines printed after the ``error:`` line (``did you mean --context?``), as kubectl does.
    """

    exit_code = 2

    def __init__(self, message="", hints=()):
        super().__init__(message)
        self.hints = list(hints)


class ConfigError(AicrError):
    """The kubeconfig cannot be read or does not say how to reach a cluster."""


class YAMLError(ConfigError):
    """A YAML or JSON document that the reader refuses.

    Attributes: ``filename`` (str), ``line`` and ``column`` (1-based ints),
    ``problem`` (str). ``str()`` gives ``<filename>:<line>:<column>: <problem>``.
    """

    def __init__(self, problem, filename="<input>", line=1, column=1):
        self.problem = problem
        self.filename = filename
        self.line = line
        self.column = column
        super().__init__("%s:%d:%d: %s" % (filename, line, column, problem))


class AuthError(AicrError):
    """Credentials cannot be obtained (missing file, failing exec plugin, ...)."""


class TransportError(AicrError):
    """The API server could not be reached or did not answer in time (TLS, DNS, connect, deadline)."""


class ApiError(AicrError):
    """The API server answered with an error; ``status`` is its Kubernetes ``Status`` (dict) if any.

    Attributes: ``code`` (HTTP status, int), ``reason`` (Status reason, str or ""),
    ``status`` (dict). ``str()`` is the Status message, as kubectl prints it.
    """

    def __init__(self, message, code=0, reason="", status=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.status = status or {}


class RefusedError(AicrError):
    """The plugin refuses an action for a reason it explains (ended rollout, already approved, ...)."""


class UnknownOutcome(AicrError):
    """A write whose outcome cannot be known: it was sent (its first byte may have left), its answer did not
    say "not stored" (lost, cut short, a 5xx, or the command was interrupted), and reading the rollout again
    could not show it recorded, while it may still land. The message ends ``the write may have been
    recorded; check with kubectl aicr describe R`` (exit status 4)."""

    exit_code = 4


class VerificationError(AicrError):
    """Content from the cluster does not match the digest recorded for it (exit status 3)."""

    exit_code = 3
