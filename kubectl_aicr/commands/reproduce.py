"""``kubectl aicr reproduce [PLAN] [--dir PATH]``: a plan's recipe on disk, and three commands that prove its bundle.

Source: README.md ("reproduce") and docs/operator-api.md ("Plan ConfigMap").
Reads only (GET and LIST): it changes nothing in the cluster.

- PLAN absent: ClusterRuntime ``cluster``'s active plan, else its candidate; ``sha256:<digest>``
  (all 64 hex digits, or a prefix of 16 or more as describe prints it, ``sha256:`` optional): found by listing the
  plan ConfigMaps and matching their desired-state digest annotation, never by trusting a name
  (a prefix must name exactly one plan; the candidates are listed when it does not);
  ``aicr-plan-<16 hex>``: fetched by name, its annotation checked against the name.
- ``--dir`` must not read as an option (``-``, ``-x``): write ``./-x`` for such a folder.
- The plan's render flags must all be ``aicr bundle`` flags this plugin knows (RENDER_FLAGS,
  from the AICR CLI reference), each value of the recorded shape; anything else (``--config``,
  ``--data``, ``--``, a bare word, ...) could make the render read something other than the
  verified recipe, so it is refused.
- Refused, writing nothing: a plan rebuilt from Applications (no recipe), one that records no
  render flags, one whose recipe does not hash to ``recipeDigest`` (VerificationError, exit 3),
  and any value that cannot be quoted safely for a shell (control characters).
- ``<dir>/recipe.json`` gets exactly the plan's bytes, written atomically (temporary file in
  ``<dir>``, then rename), never through a symlink planted at the target.
"""

import os
import re

from .. import cli, output
from ..aicr import objects
from ..kube import clientcmd
from ..cli import DEFAULT_REPRODUCE_DIR
from ..errors import ApiError, RefusedError, UsageError, VerificationError

PLAN_NAME_RE = re.compile(r"\Aaicr-plan-[0-9a-f]{16}\Z")
RECIPE_FILE = "recipe.json"
OWN_FLAGS = ("--recipe", "-r", "--output", "-o")  # the aicr bundle flags reproduce sets (its own come last too)
# Run the render as the invoking user, so that rendered/ is theirs (Docker on Linux writes as root otherwise).
# Printed as it is, not quoted: the shell expands it when the line is pasted.
DOCKER_USER = '--user "$(id -u):$(id -g)"'

# The `aicr bundle` flags a plan's renderFlags may hold, with the shape of their value (None: a boolean
# flag, given alone or as --flag=true|false). Source: the AICR CLI reference, `aicr bundle` (pkg/cli/bundle.go
# and its surface baseline pkg/cli/testdata/cli-surface.golden in NVIDIA/aicr). Left out on purpose: --recipe
# and --output (reproduce's own), --config, --data and --set-file (they read files or URLs that nobody
# verified, and --config can name another recipe), --kubeconfig, and the signing and registry flags
# (--attest, --identity-token, --signing-key, ..., --plain-http, --insecure-tls), which do not shape the
# rendered files. A newer AICR release may add flags: use the plugin from the same release as the operator.
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_DNS1123_SUBDOMAIN = r"(?=.{1,253}\Z)%s(\.%s)*" % (_DNS1123_LABEL, _DNS1123_LABEL)
_LABEL_KEY = r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_EFFECT = r"(NoSchedule|PreferNoSchedule|NoExecute)"
_COMPONENT_PATH = r"[a-z0-9][-a-z0-9]*:[A-Za-z0-9_][-A-Za-z0-9_.\[\]]*"
_SHAPES = {
    "deployer": (r"helm|helmfile|argocd|argocd-helm|flux", "helm, helmfile, argocd, argocd-helm or flux"),
    "url": (r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]+|[A-Za-z0-9][A-Za-z0-9_.-]*@[^\s]+", "a repository URL"),
    "subdomain": (_DNS1123_SUBDOMAIN, "a DNS-1123 subdomain"),
    "label": (_DNS1123_LABEL, "a DNS-1123 label"),
    "override": (_COMPONENT_PATH + r"=.*", "component:path=value"),
    "path": (_COMPONENT_PATH, "component:path"),
    "selector": (_LABEL_KEY + "=" + _LABEL_VALUE, "key=value"),
    "toleration": (_LABEL_KEY + "(=" + _LABEL_VALUE + ")?:" + _EFFECT, "key=value:effect"),
    "count": (r"0|[1-9][0-9]{0,5}", "a whole number"),
}
RENDER_FLAGS = {
    "--deployer": "deployer", "-d": "deployer",
    "--repo": "url",
    "--app-name": "subdomain",
    "--set": "override", "--set-json": "override",
    "--dynamic": "path",
    "--system-node-selector": "selector", "--accelerated-node-selector": "selector",
    "--workload-selector": "selector", "--dra-eviction-node-label": "selector",
    "--system-node-toleration": "toleration", "--accelerated-node-toleration": "toleration",
    "--workload-gate": "toleration",
    "--nodes": "count",
    "--storage-class": "subdomain", "--shared-storage-class": "subdomain",
    "--flux-namespace": "label", "--flux-oci-source-name": "subdomain",
    "--vendor-charts": None, "--readiness-hooks": None, "--serial": None,
}


def run(invocation):
    namespace = cli.operator_namespace(invocation)
    folder = invocation.dir or DEFAULT_REPRODUCE_DIR
    plan_name = _check_plan_argument(invocation.name)
    if not shell_safe(folder):
        raise UsageError("--dir %s has control characters; choose a plain folder name" % folder)
    if folder.startswith("-"):
        raise UsageError("--dir %s reads as an option; for a folder of that name write ./%s"
                         % (folder, folder))
    if not shell_safe(os.path.abspath(folder)):
        raise UsageError("the folder %s has control or invisible characters, which cannot be printed safely "
                         "in the commands; give --dir a plain absolute path" % os.path.abspath(folder))
    with clientcmd.connect(invocation) as client:
        chosen, configmap = find_plan(client, namespace, plan_name)
    plan = objects.plan(configmap)
    recipe = _checked_recipe(plan)
    flags, image, bundle = _checked_render_inputs(plan)
    path = write_atomically(folder, RECIPE_FILE, recipe)
    output.write_lines(report_lines(chosen, plan, image, bundle, flags, os.path.dirname(path)))
    return 0


def _check_plan_argument(name):
    """PLAN as given -> a plan name or ``sha256:<hex>`` (a bare digest prefix gets its ``sha256:``, by
    cli.digest_prefix); None when absent. UsageError otherwise."""
    if name is None or PLAN_NAME_RE.match(name):
        return name
    digest = cli.digest_prefix(name)
    if digest is not None:
        return digest
    raise UsageError("PLAN must be sha256:<64 lowercase hex> (or its first 16 or more hex digits, with or without "
                     "sha256:), or aicr-plan-<16 hex>, not %r" % name)


# ---------------------------------------------------------------------------------------------
# Finding the plan


def find_plan(client, namespace, name):
    """Return ``(how it was chosen, the plan ConfigMap dict)``. RefusedError when there is none or several."""
    if name is None:
        runtime = objects.runtime(_get(client, objects.runtime_path(), "ClusterRuntime %s" % objects.RUNTIME_NAME))
        for which, digest in (("active", runtime.active_plan), ("candidate", runtime.candidate_plan)):
            if isinstance(digest, objects.Invalid):
                raise RefusedError("ClusterRuntime %s: %s" % (objects.RUNTIME_NAME, digest))
            if digest:
                return "the %s plan of ClusterRuntime %s" % (which, objects.RUNTIME_NAME), \
                    _plan_by_digest(client, namespace, digest)
        raise RefusedError("ClusterRuntime %s has neither an active nor a candidate plan" % objects.RUNTIME_NAME)
    if name.startswith("sha256:"):
        how = "found by its digest" if objects.is_digest(name) else "found by its digest prefix"
        return how, _plan_by_digest(client, namespace, name)
    configmap = _get(client, objects.configmap_path(namespace, name), "plan %s" % name)
    digest = objects.plan(configmap).digest
    if not isinstance(digest, str) or objects.plan_configmap_name(digest) != name:
        raise RefusedError("ConfigMap %s in %s records desired-state digest %s, which does not match its name"
                           % (name, namespace, digest))
    return "named on the command line", configmap


def _get(client, path, what):
    try:
        return client.get(path)
    except ApiError as exc:
        if exc.code == 404:
            raise RefusedError("%s was not found (%s)" % (what, exc)) from None
        raise


def _plan_by_digest(client, namespace, digest):
    """The one plan ConfigMap whose desired-state digest is ``digest``, or starts with it (a prefix)."""
    listed = client.get(objects.configmap_path(namespace), query={"labelSelector": objects.PLAN_SELECTOR})
    matches = []
    for item in objects.list_items(listed, "plan ConfigMaps"):
        found = objects.plan(item).digest
        if isinstance(found, str) and objects.is_digest(found) and found.startswith(digest):
            matches.append(item)
    if not matches:
        if objects.is_digest(digest):
            raise RefusedError("no plan ConfigMap in %s has desired-state digest %s" % (namespace, digest))
        raise RefusedError("no plan ConfigMap in %s has a desired-state digest starting with %s" % (namespace, digest))
    digests = sorted(set(objects.plan(m).digest for m in matches))
    if len(digests) > 1:
        candidates = "; ".join("%s (%s)" % (d, ", ".join(sorted(str(objects.plan(m).name) for m in matches
                                                              if objects.plan(m).digest == d))) for d in digests)
        raise RefusedError("%s names %d plans in %s: %s; give more of the digest"
                           % (digest, len(digests), namespace, candidates))
    if len(matches) > 1:
        names = ", ".join(sorted(str(objects.plan(m).name) for m in matches))
        raise RefusedError("%d plan ConfigMaps in %s claim desired-state digest %s (%s); refusing to guess"
                           % (len(matches), namespace, digest, names))
    return matches[0]


# ---------------------------------------------------------------------------------------------
# Checking it


def _checked_recipe(plan):
    if plan.source == objects.SOURCE_APPLICATIONS or plan.recipe is None:
        raise RefusedError("plan %s was rebuilt from Argo CD Applications and has no recipe to reproduce"
                           % plan.name)
    if isinstance(plan.recipe, objects.Invalid) or isinstance(plan.recipe_digest, objects.Invalid):
        raise RefusedError("plan %s: %s" % (plan.name, plan.recipe if isinstance(plan.recipe, objects.Invalid)
                                             else plan.recipe_digest))
    if plan.recipe_digest is None:
        raise RefusedError("plan %s records no recipeDigest, so its recipe cannot be verified" % plan.name)
    try:
        data = plan.recipe.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate escape (\ud800): not text, so it cannot hash to any digest
        raise VerificationError("the recipe of plan %s is not text: it holds a lone UTF-16 surrogate, so it "
                                "cannot match its recorded recipeDigest %s; nothing was written"
                                % (plan.name, plan.recipe_digest)) from None
    actual = objects.sha256_digest(data)
    if actual != plan.recipe_digest:
        raise VerificationError("the recipe of plan %s hashes to %s, not to its recorded recipeDigest %s; "
                                "nothing was written" % (plan.name, actual, plan.recipe_digest))
    return data


def _checked_render_inputs(plan):
    if plan.render_flags is None:
        raise RefusedError("plan %s records no render flags (renderFlags), so its bundle cannot be reproduced"
                           % plan.name)
    for value in (plan.render_flags, plan.aicr_image, plan.bundle):
        if isinstance(value, objects.Invalid):
            raise RefusedError("plan %s: %s" % (plan.name, value))
    if not plan.aicr_image or not re.match(objects.IMAGE_BY_DIGEST, plan.aicr_image):
        raise RefusedError("plan %s: its AICR image %s is not an image reference pinned by digest "
                           "(name@sha256:<64 hex>)" % (plan.name, output.or_none(plan.aicr_image)))
    if not plan.bundle or not re.match(objects.IMAGE_BY_DIGEST, plan.bundle):
        raise RefusedError("plan %s: its bundle %s is not a reference pinned by digest (name@sha256:<64 hex>)"
                           % (plan.name, output.or_none(plan.bundle)))
    for value in [plan.aicr_image, plan.bundle] + list(plan.render_flags):
        if not shell_safe(value):
            raise RefusedError("plan %s holds a value with control characters, which cannot be quoted safely "
                               "for a shell: %s" % (plan.name, output.or_none(value)))
    problem = render_flags_problem(plan.render_flags)
    if problem:
        raise RefusedError("plan %s: %s" % (plan.name, problem))
    return list(plan.render_flags), plan.aicr_image, plan.bundle


def render_flags_problem(flags):
    """Why ``flags`` (a plan's renderFlags, a list of strings) cannot be passed to ``aicr bundle``, or None.

    Every item must be a flag of RENDER_FLAGS (``--flag value`` or ``--flag=value``; a boolean flag alone
    or ``--flag=true|false``) whose value has the flag's shape.
    """
    index = 0
    while index < len(flags):
        item = flags[index]
        name, has_value, value = item.partition("=")
        if name in OWN_FLAGS:
            return "its render flags set %s, which reproduce sets itself" % name
        if name not in RENDER_FLAGS:
            what = "the argument %s" % output.or_none(item) if not item.startswith("-") or item == "--" \
                else "the flag %s" % name
            return ("its render flags hold %s, which is not an `aicr bundle` flag this plugin knows to keep the "
                    "render tied to the verified recipe; use the kubectl-aicr from the same AICR release as the "
                    "operator" % what)
        shape = RENDER_FLAGS[name]
        if shape is None:
            if has_value and value not in ("true", "false"):
                return "render flag %s takes no value but true or false, not %s" % (name, output.or_none(value))
            index += 1
            continue
        if not has_value:
            if index + 1 >= len(flags):
                return "render flag %s has no value" % name
            value = flags[index + 1]
            index += 1
        pattern, described = _SHAPES[shape]
        if not re.fullmatch(pattern, value):
            return "render flag %s has the value %s, which is not %s" % (name, output.or_none(value), described)
        index += 1
    return None


def shell_safe(value):
    """True when ``value`` has no control characters (C0, DEL, C1, bidi, separators), so shlex.quote shows it as it is."""
    return value != "" and output.printable(value)


# ---------------------------------------------------------------------------------------------
# Writing the recipe


def _what_is_there(path):
    """What ``path`` (which exists, or is a symbolic link, and is no folder) is, for the message: a symbolic
    link that leads nowhere, a link to something that is not a folder, or the file itself."""
    if not os.path.islink(path):
        return " (a file)" if os.path.isfile(path) else ""
    try:
        target = " to %s" % os.readlink(path)
    except OSError:
        target = ""
    if not os.path.exists(path):
        return " (a broken symbolic link%s)" % target
    return " (a symbolic link%s, which is %s)" % (target, "a file" if os.path.isfile(path) else "not a folder")


def write_atomically(folder, name, data):
    """Write ``data`` to ``folder/name`` atomically; return the path written (absolute).

    The folder is made if needed. The bytes go to a new temporary file created
    (O_EXCL, O_NOFOLLOW) in the folder and fsynced, then renamed over ``name``: a
    symlink planted at ``name`` is replaced, never written through, and nothing is
    written outside the folder. On any failure the temporary file is removed.
    """
    folder = os.path.abspath(folder)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise RefusedError("--dir %s is not a folder%s" % (folder, _what_is_there(folder)))
    try:
        os.makedirs(folder, exist_ok=True)
        directory = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise RefusedError("cannot use folder %s: %s" % (folder, exc.strerror or exc)) from None
    temporary = ".%s.%d.tmp" % (name, os.getpid())
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644,
                     dir_fd=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=directory)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise RefusedError("cannot write %s in %s: %s" % (name, folder, exc.strerror or exc)) from None
    finally:
        os.close(directory)
    return os.path.join(folder, name)


# ---------------------------------------------------------------------------------------------
# What to print


def report_lines(chosen, plan, image, bundle, flags, folder):
    """The plan, the image, the bundle and the three commands, every word shell-quoted as stdout shows it."""
    rendered, pulled = os.path.join(folder, "rendered"), os.path.join(folder, "bundle")
    docker_head = ["docker", "run", "--rm"]
    docker = ["-v", "%s:/work" % folder, image, "bundle"] + flags + [
        "--recipe", "/work/" + RECIPE_FILE, "--output", "/work/rendered"]
    lines = output.fields([
        ("Plan", "%s (ConfigMap %s; %s)" % (plan.digest, output.or_none(plan.name), chosen)),
        ("AICR image", image),
        ("Bundle", bundle),
        ("Recipe", "%s (%d bytes, %s verified)" % (os.path.join(folder, RECIPE_FILE), len(plan.recipe.encode()),
                                                    plan.recipe_digest)),
    ])
    lines += [
        "",
        "Run these yourself:",
        "",
        "# 1. render the recipe with the AICR CLI the plan was rendered with, and its recorded flags",
        output.shell_line(docker_head) + " " + DOCKER_USER + " " + output.shell_line(docker),
        "# 2. pull the bundle the operator deployed",
        output.shell_line(["oras", "pull", "--output", pulled, bundle]),
        "# 3. compare them",
        output.shell_line(["diff", "-r", rendered, pulled]),
        "",
        "Zero diff means the operator deployed exactly what the AICR CLI renders (verify the bundle yourself).",
    ]
    return lines
