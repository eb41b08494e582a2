"""``kubectl-aicr __complete WORD... PARTIAL``: shell completion, as kubectl 1.26+ asks a plugin for it.

Source: k8s.io/kubectl ``pkg/cmd/plugin_completion.go``: kubectl runs the executable
``kubectl_complete-aicr`` with the words typed after ``aicr``, the last one the word
being completed (``""`` for a new word), and passes on what it prints: one candidate
per line, then ``:<directive>`` (Cobra's ShellCompDirective: 0 default, 4 no file
completion). The release's ``kubectl_complete-aicr`` runs this command.

Completes commands, flags, context names from the kubeconfig, and rollout and plan
names from the cluster: for approve, acknowledge and revoke only the rollouts that
command can act on, decided as ``list`` shows them (issue 16). Asking the cluster is bounded by a short deadline, and any
failure there quietly gives no candidates: completion never prints an error.
"""

from .. import cli, output

# kubeconfig, objects, clientcmd and rest (ssl, socket) load only when a candidate needs them:
# completing a command or a flag name, on every Tab press, loads none of them.

NO_FILE = 4
DEFAULT = 0
CLUSTER_SECONDS = 3.0
ROLLOUT_COMMANDS = ("describe", "approve", "revoke", "acknowledge")
DURATIONS = ("30m", "1h", "2h", "4h", "8h")


def run(words):
    """Print the candidates for ``words`` (the arguments after ``__complete``); always returns 0."""
    candidates, directive = complete(list(words) or [""])
    output.write_lines([name for name in candidates if name] + [":%d" % directive])  # an empty name: no candidate
    return 0


def complete(words):
    """(candidates, directive) for the typed ``words``; the last word is the one being completed."""
    done, partial = words[:-1], words[-1]
    flags = {flag for flag, _, _ in cli.FLAGS}
    valued = {flag for flag in flags if cli.takes_value(flag)}
    if done and done[-1] in valued:
        return _flag_values(done[-1], partial, done[:-1])
    if partial.startswith("--") and "=" in partial:
        flag, _, value = partial.partition("=")
        if flag in flags:
            values, directive = _flag_values(flag, value, done)
            return [flag + "=" + v for v in values], directive
    if partial.startswith("-"):
        names = sorted(flags | {"--help", "--version"})
        return [n for n in names if n.startswith(partial)], NO_FILE
    operands = _operands(done, valued)
    if not operands:
        return [c for c in cli.COMMANDS if c.startswith(partial)], NO_FILE
    command = operands[0]
    if len(operands) == 1 and command in ROLLOUT_COMMANDS:
        return _from_cluster(done, partial, lambda client, invocation: _rollout_names(client, command)), NO_FILE
    if len(operands) == 1 and command == "reproduce":
        return _from_cluster(done, partial, _plan_names), NO_FILE
    if len(operands) == 1 and command == "help":
        return [c for c in cli.COMMANDS if c.startswith(partial)], NO_FILE
    return [], NO_FILE


def _operands(done, flags):
    operands, skip = [], False
    for word in done:
        if skip:
            skip = False
        elif word in flags:
            skip = True
        elif not word.startswith("-"):
            operands.append(word)
    return operands


def _flag_values(flag, partial, done):
    if flag == "--context":
        from ..kube import kubeconfig
        try:
            config = kubeconfig.load(cli.typed_invocation(done).kubeconfig)
        except Exception:  # completion never prints an error
            return [], NO_FILE
        return sorted(n for n in config.contexts if n.startswith(partial)), NO_FILE
    if flag == "--expires":
        return [d for d in DURATIONS if d.startswith(partial)], NO_FILE
    if flag == "--dry-run":
        return [m for m in cli.DRY_RUN_MODES if m.startswith(partial)], NO_FILE
    if flag in ("--kubeconfig", "--dir"):
        return [], DEFAULT
    return [], NO_FILE


def _from_cluster(done, partial, names_of):
    from ..kube import clientcmd, rest
    invocation = cli.typed_invocation(done)
    try:
        with clientcmd.connect(invocation, deadline=rest.Deadline(CLUSTER_SECONDS)) as client:
            names = names_of(client, invocation)
    except Exception:  # unreachable, forbidden, slow: quietly nothing
        return []
    return sorted(n for n in names if isinstance(n, str) and n.startswith(partial))


# command -> which rollouts it can act on, decided as ``list`` shows them (issue 16); describe: every rollout.
ACTIONABLE = {
    "approve": lambda rollout: rollout.awaits_approval,
    "acknowledge": lambda rollout: rollout.awaits_acknowledgement,
    "revoke": lambda rollout: rollout.revocable,
}


def _rollout_names(client, command):
    """The names of the rollouts ``command`` can act on, read as ``list`` reads them (paged)."""
    from .list import list_rollouts
    wanted = ACTIONABLE.get(command, lambda rollout: True)
    return [rollout.name for rollout in list_rollouts(client) if wanted(rollout)]


def _plan_names(client, invocation):
    from ..aicr import objects
    namespace = cli.operator_namespace(invocation)
    listed = client.get(objects.configmap_path(namespace), query={"labelSelector": objects.PLAN_SELECTOR})
    names = []
    for item in objects.list_items(listed, "plan ConfigMaps"):
        plan = objects.plan(item)
        names += [value for value in (plan.name, plan.digest) if isinstance(value, str)]
    return names
