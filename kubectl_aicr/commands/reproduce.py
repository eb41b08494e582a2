"""``kubectl aicr reproduce [PLAN] [--dir PATH]``: a plan's recipe on disk, and three commands that prove its bundle.

Source: ../shared/spec/kubectl-aicr-seed.txt ("reproduce") and operator-api.md ("Plan ConfigMap").
Reads only (GET and LIST): it changes nothing in the cluster.

- PLAN absent: ClusterRuntime ``cluster``'s active plan, else its candidate; ``sha256:<digest>``:
  found by listing the plan ConfigMaps and matching their desired-state digest annotation,
  never by trusting a name; ``aicr-plan-<16 hex>``: fetched by name, its annotation checked
  against the name.
- Refused, writing nothing: a plan rebuilt from Applications (no recipe), one that records no
  render flags, one whose recipe does not hash to ``recipeDigest`` (VerificationError, exit 3),
  and any value that cannot be quoted safely for a shell (control characters).
- ``<dir>/recipe.json`` gets exactly the plan's bytes, written atomically (temporary file in
  ``<dir>``, then rename), never through a symlink planted at the target.
"""

import os
import re

from .. import objects, output, session
from ..cli import DEFAULT_OPERATOR_NAMESPACE, DEFAULT_REPRODUCE_DIR
from ..errors import ApiError, RefusedError, UsageError, VerificationError

PLAN_NAME_RE = re.compile(r"\Aaicr-plan-[0-9a-f]{16}\Z")
RECIPE_FILE = "recipe.json"
OWN_FLAGS = ("--recipe", "-r", "--output", "-o")  # the aicr bundle flags reproduce sets (its own come last too)


def run(invocation):
    namespace = invocation.operator_namespace or DEFAULT_OPERATOR_NAMESPACE
    folder = invocation.dir or DEFAULT_REPRODUCE_DIR
    _check_plan_argument(invocation.name)
    if not shell_safe(folder):
        raise UsageError("--dir %s has control characters; choose a plain folder name" % output.safe(folder))
    if not shell_safe(os.path.abspath(folder)):
        raise UsageError("the folder %s has control or invisible characters, which cannot be printed safely "
                         "in the commands; give --dir a plain absolute path" % output.safe(os.path.abspath(folder)))
    with session.connect(invocation) as client:
        chosen, configmap = find_plan(client, namespace, invocation.name)
    plan = objects.plan(configmap)
    recipe = _checked_recipe(plan)
    flags, image, bundle = _checked_render_inputs(plan)
    path = write_atomically(folder, RECIPE_FILE, recipe)
    output.write_lines(report_lines(chosen, plan, image, bundle, flags, os.path.dirname(path)))
    return 0


def _check_plan_argument(name):
    if name is None or objects.DIGEST_RE.match(name) or PLAN_NAME_RE.match(name):
        return
    raise UsageError("PLAN must be sha256:<64 lowercase hex> or aicr-plan-<16 hex>, not %r" % name)


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
        return "found by its digest", _plan_by_digest(client, namespace, name)
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
    listed = client.get(objects.configmap_path(namespace), query={"labelSelector": objects.PLAN_SELECTOR})
    matches = [item for item in objects.list_items(listed) if objects.plan(item).digest == digest]
    if not matches:
        raise RefusedError("no plan ConfigMap in %s has desired-state digest %s" % (namespace, digest))
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
    if not plan.aicr_image or not objects.IMAGE_BY_DIGEST_RE.match(plan.aicr_image):
        raise RefusedError("plan %s: its AICR image %s is not an image reference pinned by digest "
                           "(name@sha256:<64 hex>)" % (plan.name, output.safe(plan.aicr_image)))
    if not plan.bundle or not objects.IMAGE_BY_DIGEST_RE.match(plan.bundle):
        raise RefusedError("plan %s: its bundle %s is not a reference pinned by digest (name@sha256:<64 hex>)"
                           % (plan.name, output.safe(plan.bundle)))
    for flag in plan.render_flags:
        if flag.split("=", 1)[0] in OWN_FLAGS:
            raise RefusedError("plan %s: its render flags set %s, which reproduce sets itself"
                               % (plan.name, output.safe(flag)))
    for value in [plan.aicr_image, plan.bundle] + list(plan.render_flags):
        if not shell_safe(value):
            raise RefusedError("plan %s holds a value with control characters, which cannot be quoted safely "
                               "for a shell: %s" % (plan.name, output.safe(value)))
    return list(plan.render_flags), plan.aicr_image, plan.bundle


def shell_safe(value):
    """True when ``value`` has no control characters (C0, DEL, C1, bidi, separators), so shlex.quote shows it as it is."""
    return output.safe(value) == value and value != ""


# ---------------------------------------------------------------------------------------------
# Writing the recipe


def write_atomically(folder, name, data):
    """Write ``data`` to ``folder/name`` atomically; return the path written (absolute).

    The folder is made if needed. The bytes go to a new temporary file created
    (O_EXCL, O_NOFOLLOW) in the folder and fsynced, then renamed over ``name``: a
    symlink planted at ``name`` is replaced, never written through, and nothing is
    written outside the folder. On any failure the temporary file is removed.
    """
    folder = os.path.abspath(folder)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise RefusedError("--dir %s is not a folder%s" % (
            folder, " (a broken symbolic link)" if os.path.islink(folder) else ""))
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
    docker = ["docker", "run", "--rm", "-v", "%s:/work" % folder, image, "bundle"] + flags + [
        "--recipe", "/work/" + RECIPE_FILE, "--output", "/work/rendered"]
    lines = output.fields([
        ("Plan", "%s (ConfigMap %s; %s)" % (output.safe(plan.digest), output.safe(plan.name), output.safe(chosen))),
        ("AICR image", image),
        ("Bundle", bundle),
        ("Recipe", "%s (%d bytes, %s verified)" % (os.path.join(folder, RECIPE_FILE), len(plan.recipe.encode()),
                                                    output.safe(plan.recipe_digest))),
    ])
    lines += [
        "",
        "Run these yourself:",
        "",
        "# 1. render the recipe with the AICR CLI the plan was rendered with, and its recorded flags",
        output.shell_line(docker),
        "# 2. pull the bundle the operator deployed",
        output.shell_line(["oras", "pull", "--output", pulled, bundle]),
        "# 3. compare them",
        output.shell_line(["diff", "-r", rendered, pulled]),
        "",
        "Zero diff means the operator deployed exactly what the AICR CLI renders (verify the bundle yourself).",
    ]
    return lines
