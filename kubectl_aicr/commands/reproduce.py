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
- ``--dir`` (default ``aicr-reproduce`` in the current folder, made with mode 0700 when missing) must be
  yours alone: refused when it belongs to someone else or others may write to it, when a folder above it
  belongs to someone other than you or root or others may write to it without the sticky bit, or when a
  symbolic link on the way belongs to someone other than you or root (check_trusted); a relative one in a
  current folder that was deleted is refused with one line.
- ``<dir>/recipe.json`` gets exactly the plan's bytes (the plugin's page), written atomically (temporary
  file, then rename), never through a symbolic link. Each run also makes a new, empty folder under --dir,
  ``aicr-plan-<16 hex>`` (then ``-2``, ``-3``, ...), mode 0700, for ``rendered`` and ``bundle``: the three
  commands name it (its real path), so no ``rendered`` or ``bundle`` of an earlier run, or of anyone else,
  can stand in for this run's, and nobody else can swap the recipe after it was verified.
- The render's folder is given to docker as ``--mount type=bind,source=...,target=/work`` (one CSV record,
  as docker's CLI reads it), which any folder name survives; ``-v`` splits at every ``:``.
"""

import errno
import os
import re
import stat

from .. import cli, output
from ..aicr import objects
from ..kube import clientcmd
from ..cli import DEFAULT_REPRODUCE_DIR
from ..errors import ApiError, RefusedError, UsageError, VerificationError

PLAN_NAME_RE = re.compile(r"\Aaicr-plan-[0-9a-f]{16}\Z")
RECIPE_FILE = "recipe.json"
WORK = "/work"  # where the render's container sees the run's folder
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
    absolute = absolute_folder(folder)
    if not shell_safe(absolute):
        raise UsageError("the folder %s has control or invisible characters, which cannot be printed safely "
                         "in the commands; give --dir a plain absolute path" % absolute)
    with clientcmd.connect(invocation) as client:
        chosen, configmap = find_plan(client, namespace, plan_name)
    plan = objects.plan(configmap)
    recipe = _checked_recipe(plan)
    flags, image, bundle = _checked_render_inputs(plan)
    base, run_folder = write_recipe(absolute, objects.plan_configmap_name(plan.digest), recipe)
    output.write_lines(report_lines(chosen, plan, image, bundle, flags, base, run_folder))
    return 0


def absolute_folder(folder):
    """``folder`` (str, as given to --dir) as an absolute, normalized path (os.path.abspath), without a
    traceback when the current folder is gone: a relative ``folder`` needs os.getcwd, which fails (ENOENT)
    in a folder that was deleted. RefusedError then, naming the way out (an absolute --dir)."""
    if os.path.isabs(folder):
        return os.path.normpath(folder)
    try:
        here = os.getcwd()
    except OSError as exc:
        raise RefusedError("cannot find the current folder (%s: was it deleted?), so --dir %s has no place; "
                           "run reproduce from a folder that exists, or give --dir an absolute path"
                           % (exc.strerror or exc, folder)) from None
    return os.path.normpath(os.path.join(here, folder))


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
#
# The three printed commands run later, by hand (docker's daemon as root): the folders they name must stay
# what this run made and checked. So nobody but you (and root) may be able to change --dir or any folder
# above it, and each run writes into a new folder of its own, which the commands name.

RUN_FOLDER_MODE = 0o700
RECIPE_MODE = 0o644
MAX_RUN_FOLDERS = 1000  # aicr-plan-<16 hex>, -2, ... -1000 under one --dir
_STICKY = 0o1000
_WRITABLE_BY_OTHERS = 0o022  # group or others may write


def write_recipe(absolute, name, data):
    """Write ``data`` (bytes) as ``recipe.json`` in the folder ``absolute`` (--dir as an absolute path; made,
    mode 0700, with the folders it needs, when missing) and make a new, empty folder for this run's
    ``rendered`` and ``bundle`` beside it; return (--dir's real path, the run folder's real path), with no
    symbolic link in either: the commands name them.

    The run's folder is ``name`` (``aicr-plan-<16 hex>``), else ``name-2``, ``name-3``, ...: made with
    mkdir, which never follows a symbolic link or reuses a folder. RefusedError, leaving nothing behind, when
    --dir cannot be trusted (:func:`trusted_folder`) or a write fails; the folders made for it are removed.
    """
    base, made = trusted_folder(absolute)
    try:
        return base, os.path.join(base, _write_in(base, name, data))
    except BaseException:
        _remove_folders(made)
        raise


def trusted_folder(absolute):
    """``absolute`` (--dir, absolute) -> (its real path, [the folders made for it, outermost first]).

    Refused (RefusedError), before anything is made, when a symbolic link on the way belongs to someone
    other than you or root (:func:`_check_links`), when the path is no folder, or when someone else could
    change what it names (:func:`check_trusted`). Missing folders are made with mode 0700.
    """
    _check_links(absolute)
    existing, missing = absolute, []
    while not os.path.lexists(existing):
        existing, tail = os.path.split(existing)
        missing.insert(0, tail)
    if not os.path.isdir(existing):
        where = "" if existing == absolute else ": %s above it" % existing
        raise RefusedError("--dir %s is not a folder%s%s" % (absolute, where, _what_is_there(existing)))
    real = os.path.realpath(existing)
    check_trusted(real, absolute, ends_at_dir=not missing)
    made = []
    try:
        if missing:
            _make_missing(real, missing, made, absolute)
            real = os.path.join(real, *missing)
        check_trusted(real, absolute, ends_at_dir=True)
    except BaseException as exc:
        _remove_folders(made)
        if isinstance(exc, OSError):
            raise RefusedError("cannot make folder %s: %s" % (real, exc.strerror or exc)) from None
        raise
    return real, made


def _make_missing(real, missing, made, given):
    """mkdir each folder of ``missing`` (names) under ``real`` (checked, no symbolic link), each made and then
    opened relative to an open descriptor of the one before it (O_NOFOLLOW), never through a path: a folder
    someone swapped for a symbolic link in the moment between two mkdirs (in a sticky /tmp, where
    fs.protected_symlinks may be off) is refused, and nothing is made where that link leads. The folders
    made are appended to ``made`` (their paths)."""
    directory = os.open(real, _DIRECTORY_FLAGS)
    try:
        path = real
        for part in missing:
            path = os.path.join(path, part)
            try:
                os.mkdir(part, RUN_FOLDER_MODE, dir_fd=directory)
                made.append(path)
            except FileExistsError:  # made meanwhile: opened without following it, then check_trusted judges it
                pass
            try:
                child = os.open(part, _DIRECTORY_FLAGS, dir_fd=directory)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RefusedError("refusing --dir %s: %s was replaced by a symbolic link or a file while it "
                                       "was being made" % (given, path)) from None
                raise
            os.close(directory)
            directory = child
    finally:
        os.close(directory)


def _remove_folders(made):
    """rmdir the folders ``made`` (paths, outermost first), innermost first; what cannot be removed stays."""
    for path in reversed(made):
        try:
            os.rmdir(path)
        except OSError:
            pass


def _check_links(absolute):
    """Refuse (RefusedError) a symbolic link among the folders of ``absolute`` (each prefix, from ``/``,
    while they exist) that belongs to neither you nor root: its owner chooses where it leads, and can change
    it later. Linux's fs.protected_symlinks refuses such links only in sticky folders (/tmp); this refuses
    them everywhere."""
    uid = os.geteuid()
    path = os.sep
    for part in [p for p in absolute.split(os.sep) if p]:
        path = os.path.join(path, part)
        try:
            status = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(status.st_mode) and status.st_uid not in (0, uid):
            raise RefusedError("refusing --dir %s: %s is a symbolic link that belongs to uid %d, not to you "
                               "(uid %d) or root, so its owner chooses where it leads; give --dir the folder "
                               "you mean" % (absolute, path, status.st_uid, uid))


def check_trusted(real, given, ends_at_dir):
    """Refuse (RefusedError) unless only you and root can change what ``real`` names.

    ``real``: an absolute path with no symbolic link (os.path.realpath); ``given``: --dir as typed, for the
    message; ``ends_at_dir``: ``real`` is --dir itself (not a folder above a --dir still to be made). Every folder
    above --dir must belong to root or you and, when others may write to it, have the sticky bit (they can
    then add entries but not rename yours, as in /tmp); --dir must belong to you, and nobody else may write
    to it. The rules of OpenSSH's StrictModes (misc.c, safe_path: owner root or you, no group or other
    write) with the sticky-folder exception, and of git's safe.directory (the owner is you).
    """
    uid = os.geteuid()
    parts = [p for p in real.split(os.sep) if p]
    for depth in range(len(parts) + 1):
        path = os.path.join(os.sep, *parts[:depth])
        try:
            status = os.lstat(path)
        except OSError as exc:
            raise RefusedError("cannot use --dir %s: %s: %s" % (given, path, exc.strerror or exc)) from None
        if not stat.S_ISDIR(status.st_mode):  # realpath resolved it a moment ago: it was changed meanwhile
            raise RefusedError("refusing --dir %s: %s changed while it was checked (it is no longer a folder)"
                               % (given, path))
        itself = ends_at_dir and depth == len(parts)
        problem = (_dir_problem if itself else _parent_problem)(status, uid)
        if problem:
            what = ("it" if path == given else "it (%s)" % path) if itself else "the folder %s above it" % path
            raise RefusedError("refusing --dir %s: %s %s" % (given, what, problem))


def _dir_problem(status, uid):
    """Why --dir (its lstat result) is not yours alone, or None."""
    if status.st_uid != uid:
        return ("belongs to uid %d, not to you (uid %d), so its owner could replace what reproduce writes "
                "there after it was verified; give --dir a folder of your own" % (status.st_uid, uid))
    if status.st_mode & _WRITABLE_BY_OTHERS:
        return ("is writable by others (mode %04o), who could replace what reproduce writes there after it was "
                "verified; remove their write access (chmod go-w) or give --dir a folder of your own"
                % stat.S_IMODE(status.st_mode))
    return None


def _parent_problem(status, uid):
    """Why a folder above --dir (its lstat result) lets someone else put another --dir in its place, or None."""
    if status.st_uid not in (0, uid):
        return ("belongs to uid %d, not to you (uid %d) or root, so its owner could put another folder in "
                "the place of --dir; give --dir a folder under folders only you or root can change"
                % (status.st_uid, uid))
    if status.st_mode & _WRITABLE_BY_OTHERS and not status.st_mode & _STICKY:
        return ("is writable by others without the sticky bit (mode %04o), so they could put another folder "
                "in the place of --dir; give --dir a folder under folders only you or root can change"
                % stat.S_IMODE(status.st_mode))
    return None


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


_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def _write_in(base, name, data):
    """In ``base`` (checked): write ``recipe.json``, then make the run's folder; return the folder's name."""
    try:
        directory = os.open(base, _DIRECTORY_FLAGS)
    except OSError as exc:
        raise RefusedError("cannot use folder %s: %s" % (base, exc.strerror or exc)) from None
    try:
        _write_file(directory, RECIPE_FILE, data)
        made = _make_run_folder(directory, base, name)
        try:
            folder = os.open(made, _DIRECTORY_FLAGS, dir_fd=directory)
            try:
                os.fchmod(folder, RUN_FOLDER_MODE)  # exactly 0700, whatever the umask
            finally:
                os.close(folder)
        except BaseException:
            try:
                os.rmdir(made, dir_fd=directory)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise RefusedError("cannot write in %s: %s" % (base, exc.strerror or exc)) from None
    finally:
        os.close(directory)
    return made


def _make_run_folder(directory, base, name):
    """mkdir ``name``, else ``name-2``, ... in the open folder ``directory``; the name made."""
    for index in range(1, MAX_RUN_FOLDERS + 1):
        candidate = name if index == 1 else "%s-%d" % (name, index)
        try:
            os.mkdir(candidate, RUN_FOLDER_MODE, dir_fd=directory)
            return candidate
        except FileExistsError:
            continue
    raise RefusedError("%s already holds %s and %s-2 to %s-%d; remove those you no longer need"
                       % (base, name, name, name, MAX_RUN_FOLDERS))


def _write_file(directory, name, data):
    """Write ``data`` to ``name`` in the open folder ``directory`` atomically: a new temporary file (O_EXCL,
    O_NOFOLLOW), fsynced, then renamed over ``name``; removed again on any failure. OSError on failure."""
    temporary = ".%s.%d.tmp" % (name, os.getpid())
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), RECIPE_MODE,
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


# ---------------------------------------------------------------------------------------------
# What to print


def report_lines(chosen, plan, image, bundle, flags, folder, run_folder):
    """The plan, the image, the bundle and the three commands, every word shell-quoted as stdout shows it.
    ``folder``: --dir's real path (it holds recipe.json); ``run_folder``: this run's new folder in it."""
    rendered, pulled = os.path.join(run_folder, "rendered"), os.path.join(run_folder, "bundle")
    docker_head = ["docker", "run", "--rm"]
    docker = ["--mount", docker_mount(folder), image, "bundle"] + flags + [
        "--recipe", WORK + "/" + RECIPE_FILE, "--output", "%s/%s/rendered" % (WORK, os.path.basename(run_folder))]
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


def docker_mount(folder):
    """The ``docker run --mount`` value that binds ``folder`` (absolute) at /work: the fields ``type=bind``,
    ``source=FOLDER``, ``target=/work``, joined as one CSV record, because docker's CLI reads --mount with
    Go's encoding/csv Reader and cuts each field at its first ``=`` (docker/cli opts/mount.go, MountOpt.Set).
    Unlike ``-v SRC:DST``, which splits at every ``:``, any folder name survives (``,`` and ``"`` quoted)."""
    return ",".join(csv_field(field) for field in ("type=bind", "source=" + folder, "target=" + WORK))


def csv_field(field):
    """``field`` (str) as Go's encoding/csv Writer writes it (Writer.fieldNeedsQuotes): in double quotes,
    each ``"`` doubled, when it holds ``,``, ``"``, CR or LF, is ``\\.``, or starts with a space; else as it is."""
    if field and (field == "\\." or any(ch in field for ch in ',"\r\n') or field[0].isspace()):
        return '"%s"' % field.replace('"', '""')
    return field
