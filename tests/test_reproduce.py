"""reproduce, end to end: the plan's recipe on disk, verified, and three commands that are safe to paste."""

import copy
import hashlib
import json
import os
import shlex
import shutil
import subprocess

import pytest

from tests.support.plugin import base_env, plugin_command
from tests.support.text import command_lines, field, one_error_line

pytestmark = pytest.mark.e2e


def plan(api_server, role):
    return api_server.fixture(role)


def digest_of(api_server, role):
    return plan(api_server, role)["metadata"]["annotations"]["operator.aicr.run/desired-state-digest"]


def only_reads(api_server):
    return all(r.method == "GET" for r in api_server.requests)


def run_folder(api_server, role):
    """The name of the folder a first run for the plan ``role`` makes under --dir: aicr-plan-<16 hex>."""
    return "aicr-plan-" + digest_of(api_server, role)[len("sha256:"):][:16]


def test_no_argument_takes_the_active_plan(run, api_server, kubeconfig_for, tmp_path):
    folder = tmp_path / "out"
    made = folder / run_folder(api_server, "plan-active")
    result = run("reproduce", "--dir", folder, kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0, result.stderr
    active = plan(api_server, "plan-active")
    recipe = (folder / "recipe.json").read_bytes()
    assert recipe == active["data"]["recipe.json"].encode("utf-8")
    assert "the active plan of ClusterRuntime cluster" in result.stdout
    assert digest_of(api_server, "plan-active") in result.stdout and active["metadata"]["name"] in result.stdout
    assert active["data"]["aicrImage"] in result.stdout and active["data"]["bundle"] in result.stdout
    docker, oras, diff = command_lines(result.stdout)
    argv = shlex.split(docker)
    flags = json.loads(active["data"]["renderFlags"])
    assert argv[:5] == ["docker", "run", "--rm", "--user", "$(id -u):$(id -g)"] and active["data"]["aicrImage"] in argv
    assert argv[5:8] == ["--mount", "type=bind,source=%s,target=/work" % folder, active["data"]["aicrImage"]]
    assert argv[-4 - len(flags):-4] == flags  # the plan's flags, then reproduce's own, which win
    assert argv[-4:] == ["--recipe", "/work/recipe.json", "--output", "/work/%s/rendered" % made.name]
    assert shlex.split(oras) == ["oras", "pull", "--output", str(made / "bundle"), active["data"]["bundle"]]
    assert shlex.split(diff) == ["diff", "-r", str(made / "rendered"), str(made / "bundle")]
    assert os.listdir(str(made)) == []  # new and empty: rendered/ and bundle/ are this run's
    assert "Zero diff means the operator deployed exactly what the AICR CLI renders" in result.stdout
    assert only_reads(api_server)


def test_candidate_when_there_is_no_active_plan(run, api_server, kubeconfig_for, tmp_path):
    runtime = api_server.get_object("ClusterRuntime", "cluster")
    del runtime["status"]["activePlan"]
    api_server.put_object(runtime)
    result = run("reproduce", "--dir", tmp_path, kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert "the candidate plan of ClusterRuntime cluster" in result.stdout
    assert digest_of(api_server, "plan-candidate") in result.stdout


def test_neither_active_nor_candidate_is_an_error(run, api_server, kubeconfig_for, tmp_path):
    runtime = api_server.get_object("ClusterRuntime", "cluster")
    runtime["status"] = {}
    api_server.put_object(runtime)
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and "neither an active nor a candidate plan" in result.stderr
    assert not (tmp_path / "x").exists()


def test_by_digest_is_found_by_annotation_not_by_name(run, api_server, kubeconfig_for, tmp_path):
    digest = digest_of(api_server, "plan-candidate")
    result = run("reproduce", digest, "--dir", tmp_path, kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert [r.query for r in api_server.requests if r.path.endswith("/configmaps")] == [
        "labelSelector=operator.aicr.run%2Frole%3Dplan"]
    assert (tmp_path / "recipe.json").read_bytes() == \
        plan(api_server, "plan-candidate")["data"]["recipe.json"].encode()


def test_by_name_checks_the_annotation(run, api_server, kubeconfig_for, tmp_path):
    good = run("reproduce", plan(api_server, "plan-active")["metadata"]["name"], "--dir", tmp_path,
               kubeconfig=kubeconfig_for())
    assert good.returncode == 0, good.stderr
    bad = run("reproduce", plan(api_server, "plan-mislabelled")["metadata"]["name"], "--dir", tmp_path / "m",
              kubeconfig=kubeconfig_for())
    assert bad.returncode == 1 and "does not match its name" in bad.stderr
    assert not (tmp_path / "m").exists()


def test_two_configmaps_claiming_one_digest_is_ambiguous(run, api_server, kubeconfig_for, tmp_path):
    twin = copy.deepcopy(plan(api_server, "plan-active"))
    twin["metadata"]["name"] = "aicr-plan-0000000000000000"
    twin["metadata"].pop("resourceVersion", None)
    api_server.put_object(twin)
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and "refusing to guess" in result.stderr


@pytest.mark.parametrize("role,words,code", [
    ("plan-applications", "rebuilt from Argo CD Applications and has no recipe", 1),
    ("plan-no-flags", "records no render flags", 1),
    ("plan-recipe-mismatch", "does not match|not to its recorded recipeDigest", 3),
])
def test_refusals_write_nothing(run, api_server, kubeconfig_for, tmp_path, role, words, code):
    folder = tmp_path / "out"
    result = run("reproduce", digest_of(api_server, role), "--dir", folder, kubeconfig=kubeconfig_for())
    assert result.returncode == code, result.stderr
    assert any(w in result.stderr for w in words.split("|"))
    assert len(result.stderr.splitlines()) == 1
    assert not folder.exists()
    assert result.stdout == ""


@pytest.mark.parametrize("argument", ["latest", "sha256:ABC", "aicr-plan-xyz", "sha256:" + "0" * 15,
                                      "sha256:" + "0" * 65, "sha256:" + "A" * 16])
def test_a_plan_argument_of_neither_form_is_a_usage_error(run, api_server, kubeconfig_for, argument):
    result = run("reproduce", argument, kubeconfig=kubeconfig_for())
    assert result.returncode == 2 and "PLAN must be" in result.stderr
    assert api_server.requests == []


def test_unknown_digest_is_a_clear_error(run, api_server, kubeconfig_for, tmp_path):
    result = run("reproduce", "sha256:" + "a" * 64, "--dir", tmp_path, kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and "no plan ConfigMap in aicr-system has desired-state digest" in result.stderr


HOSTILE_FLAGS = ["--repo", "oci://host/a'b", "--set", "c:x='y'", "--set", 'c:a="b c"', "--set", "c:n=$(touch PWNED)",
                 "--set-json", "c:n=`touch PWNED`", "--set", "c:n=a; touch PWNED", "--set", "c:n=*", "--set",
                 "c:n=a\\nb"]


def _hostile_plan(api_server, flags):
    hostile = copy.deepcopy(plan(api_server, "plan-active"))
    hostile["data"]["renderFlags"] = json.dumps(flags)
    hostile["metadata"].pop("resourceVersion", None)
    api_server.put_object(hostile)


def test_values_from_the_cluster_are_quoted_so_pasting_runs_nothing_else(run, api_server, kubeconfig_for, tmp_path):
    flags = HOSTILE_FLAGS
    _hostile_plan(api_server, flags)
    result = run("reproduce", "--dir", tmp_path / "dir with space", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    docker = command_lines(result.stdout)[0]
    assert shlex.split(docker)[-4 - len(flags):-4] == flags
    # Run the line through a real shell with `docker` replaced by a program that prints its argv.
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "docker").write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n")
    os.chmod(shim / "docker", 0o755)
    out = subprocess.run(["sh", "-c", docker], cwd=tmp_path, stdout=subprocess.PIPE,
                         env={"PATH": "%s:/usr/bin:/bin" % shim}).stdout
    argv = out.split(b"\0")[:-1]
    assert argv[-4 - len(flags):-4] == [f.encode() for f in flags]
    # The render runs as the user who pastes the line, so rendered/ is theirs, not root's.
    assert argv[:4] == [b"run", b"--rm", b"--user", ("%d:%d" % (os.getuid(), os.getgid())).encode()]
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("bad", ["line\nbreak", "esc\x1b[31m", "tab\there", "bell\x07"])
def test_a_value_with_control_characters_is_refused(run, api_server, kubeconfig_for, tmp_path, bad):
    _hostile_plan(api_server, ["--set", "c:n=" + bad])
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and "cannot be quoted safely" in result.stderr
    assert "\x1b" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_a_planted_symlink_is_never_followed(run, api_server, kubeconfig_for, tmp_path):
    """Symbolic links in --dir where the recipe (recipe.json) or the run's folder (aicr-plan-...) would go:
    neither is written through; the recipe replaces the link with a plain file, the run takes the next free
    folder name."""
    folder = tmp_path / "out"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    name = run_folder(api_server, "plan-active")
    os.symlink(str(victim), str(folder / "recipe.json"))
    os.symlink(str(elsewhere), str(folder / name))
    result = run("reproduce", "--dir", folder, kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious" and os.listdir(str(elsewhere)) == []
    made = folder / (name + "-2")
    assert recipe_path(result.stdout) == str(folder / "recipe.json")
    assert not os.path.islink(str(made)) and not os.path.islink(str(folder / "recipe.json"))
    recipe = (folder / "recipe.json").read_bytes()
    assert "sha256:" + hashlib.sha256(recipe).hexdigest() == plan(api_server, "plan-active")["data"]["recipeDigest"]
    assert os.listdir(str(made)) == [] and str(made / "rendered") in result.stdout
    assert sorted(os.listdir(str(folder))) == sorted(["recipe.json", name, made.name])  # no temporary file left


def test_reproduce_changes_nothing_in_the_cluster(run, api_server, kubeconfig_for, tmp_path):
    for args in ([], [digest_of(api_server, "plan-candidate")], [plan(api_server, "plan-active")["metadata"]["name"]],
                 [digest_of(api_server, "plan-applications")]):
        run("reproduce", *args, "--dir", tmp_path / "d", kubeconfig=kubeconfig_for())
    assert api_server.requests and only_reads(api_server)


@pytest.mark.parametrize("field,value,words", [
    ("aicrImage", "-v/:/host@sha256:" + "a" * 64, "is not an image reference pinned by digest"),
    ("aicrImage", "ghcr.io/nv\u0456dia/aicr@sha256:" + "a" * 64, "is not an image reference pinned by digest"),
    ("bundle", "--output=/tmp/x", "is not a reference pinned by digest"),
    ("bundle", "registry/bundles:latest", "is not a reference pinned by digest"),
    ("renderFlags", json.dumps(["--recipe", "https://evil.example/recipe.json"]), "which reproduce sets itself"),
    ("renderFlags", json.dumps(["--output=/etc"]), "which reproduce sets itself"),
])
def test_plan_values_that_could_bend_the_commands_are_refused(run, api_server, kubeconfig_for, tmp_path, field,
                                                               value, words):
    hostile = copy.deepcopy(plan(api_server, "plan-active"))
    hostile["data"][field] = value
    hostile["metadata"].pop("resourceVersion", None)
    api_server.put_object(hostile)
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and words in result.stderr, result.stderr
    assert not (tmp_path / "x").exists() and result.stdout == ""


# ---------------------------------------------------------------------------------------------
# Render flags: only the `aicr bundle` flags the plugin knows, each of its shape (issue 13)

KNOWN_FLAGS = ["--deployer", "argocd", "-d=argocd", "--repo", "https://github.com/acme/gitops.git",
               "--repo=git@github.com:acme/gitops.git",
               "--app-name", "tenant-a.stack", "--set", "gpuoperator:driver.version=570.133.20",
               "--set-json", 'agentgateway:allowedSourceRanges=["216.228.127.128/30"]', "--dynamic", "alloy:clusterName",
               "--system-node-selector", "nodeGroup=system", "--accelerated-node-selector=nodeGroup=gpu",
               "--workload-selector", "app=training", "--dra-eviction-node-label", "nvidia.com/dra-evict=true",
               "--system-node-toleration", "dedicated=system:NoSchedule",
               "--accelerated-node-toleration", "nvidia.com/gpu=present:NoExecute",
               "--workload-gate", "skyhook.nvidia.com/runtime-required:NoSchedule", "--nodes", "8",
               "--storage-class", "gp3", "--shared-storage-class", "efs-sc", "--flux-namespace", "flux-system",
               "--flux-oci-source-name", "aicr-bundle", "--vendor-charts", "--readiness-hooks=false", "--serial"]


def test_every_known_bundle_flag_is_passed_through_verbatim(run, api_server, kubeconfig_for, tmp_path):
    _hostile_plan(api_server, KNOWN_FLAGS)
    result = run("reproduce", "--dir", tmp_path / "out", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert shlex.split(command_lines(result.stdout)[0])[-4 - len(KNOWN_FLAGS):-4] == KNOWN_FLAGS


def test_a_config_flag_and_a_double_dash_cannot_detach_the_render_from_the_verified_recipe(run, api_server,
                                                                                          kubeconfig_for, tmp_path):
    # The example: --config could name another recipe, and `--` would turn reproduce's own
    # --recipe into an argument, so the render would read a recipe nobody verified.
    _hostile_plan(api_server, ["--deployer", "argocd", "--config", "https://evil.example/aicr-config.yaml", "--"])
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1, result.stderr
    assert "the flag --config" in result.stderr and "same AICR release as the operator" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("flags,words", [
    (["--deployer", "argocd", "--"], "the argument --"),
    (["--data", "/srv/aicr-data"], "the flag --data"),
    (["--set-file", "gpuoperator:driver=/etc/passwd"], "the flag --set-file"),
    (["--kubeconfig", "/root/.kube/config"], "the flag --kubeconfig"),
    (["--attest"], "the flag --attest"),
    (["argocd"], "the argument argocd"),
    (["-dargocd"], "the flag -dargocd"),
    (["--vendor-charts", "true"], "the argument true"),
    (["--vendor-charts=yes"], "takes no value but true or false"),
    (["--deployer"], "render flag --deployer has no value"),
    (["--deployer", "kustomize"], "not helm, helmfile, argocd, argocd-helm or flux"),
    (["--nodes", "-1"], "not a whole number"),
    (["--set", "--config=https://evil.example/c.yaml"], "not component:path=value"),
    (["--repo", "--config"], "not a repository URL"),
    (["--repo", "--config@evil.example:x.yaml"], "not a repository URL"),
    (["--system-node-toleration", "key=value"], "not key=value:effect"),
    (["--app-name", "Not_A_Name"], "not a DNS-1123 subdomain"),
])
def test_unknown_flags_and_values_of_the_wrong_shape_are_refused(run, api_server, kubeconfig_for, tmp_path, flags,
                                                                  words):
    _hostile_plan(api_server, flags)
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and words in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------------------------------------
# --dir that reads as an option; a digest prefix as describe prints it (issue 16)

@pytest.mark.parametrize("args, words", [(["--dir", "-"], "reads as an option"), (["--dir=-rf"], "reads as an option"),
                                         (["--dir", "--help"], "flag needs an argument: --dir (--help is a flag")])
def test_a_dir_that_reads_as_an_option_is_refused(run, api_server, kubeconfig_for, tmp_path, args, words):
    work = tmp_path / "work"
    work.mkdir()
    result = run("reproduce", *args, kubeconfig=kubeconfig_for(), cwd=str(work))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and words in result.stderr.splitlines()[0]
    assert os.listdir(str(work)) == [] and api_server.requests == []


def test_a_folder_named_like_an_option_can_be_written_as_a_path(run, api_server, kubeconfig_for, tmp_path):
    result = run("reproduce", "--dir", "./-", kubeconfig=kubeconfig_for(), cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "-" / "recipe.json").exists()


def test_a_16_digit_prefix_as_describe_prints_it_names_the_plan(run, api_server, kubeconfig_for, tmp_path):
    digest = digest_of(api_server, "plan-candidate")
    result = run("reproduce", digest[:len("sha256:") + 16], "--dir", tmp_path, kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert "Plan:        %s (ConfigMap %s; found by its digest prefix)" % (
        digest, plan(api_server, "plan-candidate")["metadata"]["name"]) in result.stdout
    assert (tmp_path / "recipe.json").read_bytes() == \
        plan(api_server, "plan-candidate")["data"]["recipe.json"].encode()


def test_a_prefix_naming_several_plans_lists_them_and_writes_nothing(run, api_server, kubeconfig_for, tmp_path):
    digest = digest_of(api_server, "plan-active")
    twin = copy.deepcopy(plan(api_server, "plan-active"))
    other = digest[:len("sha256:") + 20] + ("0" if digest[-44] != "0" else "1") * 44
    twin["metadata"]["name"] = "aicr-plan-twin"
    twin["metadata"]["annotations"]["operator.aicr.run/desired-state-digest"] = other
    twin["metadata"].pop("resourceVersion", None)
    api_server.put_object(twin)
    result = run("reproduce", digest[:len("sha256:") + 16], "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1, result.stderr
    assert "names 2 plans in aicr-system" in result.stderr and "give more of the digest" in result.stderr
    assert "%s (%s)" % (digest, plan(api_server, "plan-active")["metadata"]["name"]) in result.stderr
    assert "%s (aicr-plan-twin)" % other in result.stderr
    assert not (tmp_path / "x").exists()
    longer = run("reproduce", digest[:len("sha256:") + 24], "--dir", tmp_path / "y", kubeconfig=kubeconfig_for())
    assert longer.returncode == 0, longer.stderr


def test_a_prefix_naming_no_plan_is_a_clear_error(run, api_server, kubeconfig_for, tmp_path):
    result = run("reproduce", "sha256:" + "f" * 16, "--dir", tmp_path / "x", kubeconfig=kubeconfig_for())
    assert result.returncode == 1
    assert "no plan ConfigMap in aicr-system has a desired-state digest starting with sha256:ffff" in result.stderr


@pytest.mark.parametrize("folder", ["esc\x1b]0;pwned\x07", "zero\u200bwidth", "line\nbreak"])
def test_a_current_folder_with_control_characters_is_refused_before_anything_is_written(
        run, api_server, kubeconfig_for, tmp_path, folder):
    """reproduce prints absolute paths built from the current folder; control or invisible characters there
    used to reach the terminal raw inside the three commands. Refused, naming the folder escaped."""
    here = tmp_path / folder
    here.mkdir()
    result = run("reproduce", "--dir", "out", kubeconfig=kubeconfig_for(), cwd=here)
    assert result.returncode == 2 and "give --dir a plain absolute path" in result.stderr, result
    assert "\x1b" not in result.stderr and "\u200b" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert result.stdout == "" and not (here / "out").exists()


def test_a_current_folder_the_terminal_cannot_show_gives_commands_that_paste_the_same_paths(
        run, api_server, kubeconfig_for, tmp_path):
    here = tmp_path / "caf\u00e9 \u2713"
    here.mkdir()
    result = run("reproduce", "--dir", "out", kubeconfig=kubeconfig_for(), cwd=here,
                 env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.isascii() and "\\u2713" in result.stdout  # the Recipe line shows the escape
    docker, oras, diff = command_lines(result.stdout)
    assert "\\u" not in docker + oras + diff
    made = here / "out" / run_folder(api_server, "plan-active")
    # docker's line from its --mount on (what comes before holds no path)
    for line, expected in ((docker[docker.index(" --mount "):].replace(" --mount ", "docker --mount ", 1),
                            ["docker", "--mount", "type=bind,source=%s,target=/work" % made.parent]),
                           (oras, ["oras", "pull", "--output", str(made / "bundle")]),
                           (diff, ["diff", "-r", str(made / "rendered"), str(made / "bundle")])):
        shim = tmp_path / "shim"
        shim.mkdir(exist_ok=True)
        (shim / expected[0]).write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n")
        os.chmod(shim / expected[0], 0o755)
        ran = subprocess.run(["sh", "-c", line], stdout=subprocess.PIPE, check=True,
                             env={"PATH": "%s:/usr/bin:/bin" % shim, "LC_ALL": "C"}).stdout
        assert ran.split(b"\0")[:-1][:len(expected) - 1] == [os.fsencode(w) for w in expected[1:]]
    assert (made.parent / "recipe.json").exists() and made.is_dir()


# ---------------------------------------------------------------------------------------------
# The current folder, the printed commands' folder names, and a folder another user made (issue 20)

GO_MOUNT_ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support", "docker_mount", "main.go")


def recipe_path(stdout):
    """The recipe's path from the ``Recipe:`` line (as printed, up to its `` (N bytes`` note)."""
    return field(stdout, "Recipe").rsplit(" (", 1)[0]


def pasted_argv(line, tmp_path):
    """The argv (str each) that ``line`` runs when pasted into sh, its program replaced by one printing it."""
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    program = line.split(" ")[0]
    (shim / program).write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n")
    os.chmod(shim / program, 0o755)
    out = subprocess.run(["sh", "-c", line], stdout=subprocess.PIPE, check=True, cwd=str(tmp_path),
                         env={"PATH": "%s:/usr/bin:/bin" % shim}).stdout
    return [os.fsdecode(word) for word in out.split(b"\0")[:-1]]


def run_in_a_deleted_folder(plugin, home, args, kubeconfig, tmp_path):
    """Run the plugin with its current folder deleted under it (made, entered, then removed in the child)."""
    gone = tmp_path / "gone"
    gone.mkdir()

    def enter_and_delete():
        os.chdir(str(gone))
        os.rmdir(str(gone))
    env = dict(base_env(home), KUBECONFIG=str(kubeconfig))
    return subprocess.run(plugin_command(plugin) + [str(a) for a in args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60,
                          preexec_fn=enter_and_delete)


def test_a_deleted_current_folder_is_one_clear_error_and_an_absolute_dir_still_works(
        plugin, api_server, kubeconfig_for, tmp_path):
    """The issue's crash: `reproduce` in a folder that was deleted ended with exit 70 (os.path.abspath's getcwd)."""
    home = tmp_path / "home"
    home.mkdir()
    relative = run_in_a_deleted_folder(plugin, home, ["reproduce"], kubeconfig_for(), tmp_path)
    line = one_error_line(relative, "current folder", "--dir")
    assert "internal error" not in line and relative.stdout == ""
    assert api_server.requests == []  # refused before anything is asked or written
    absolute = run_in_a_deleted_folder(plugin, home, ["reproduce", "--dir", tmp_path / "out"], kubeconfig_for(),
                                       tmp_path)
    assert absolute.returncode == 0, absolute.stderr
    assert os.path.isfile(recipe_path(absolute.stdout))


@pytest.fixture(scope="module")
def docker_mount_parser(tmp_path_factory):
    """A test-only Go program parsing a --mount value as docker's CLI does (encoding/csv), built once."""
    go = shutil.which("go")
    assert go is not None, "no Go toolchain on PATH to build the docker --mount oracle (go is a test tool: install it)"
    binary = str(tmp_path_factory.mktemp("go") / "docker_mount")
    subprocess.run([go, "build", "-o", binary, GO_MOUNT_ORACLE], check=True, cwd=os.path.dirname(GO_MOUNT_ORACLE),
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)

    def parse(value):
        done = subprocess.run([binary], input=os.fsencode(value), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert done.returncode == 0, done.stderr
        return [tuple(pair) for pair in json.loads(done.stdout)]
    return parse


@pytest.mark.parametrize("name", ["a:b", "a,b", 'a"b', "a=b,c", ' lead "q",x:y', "it's", "$(touch PWNED)"])
def test_every_printed_command_gets_the_run_folder_whatever_its_name(run, api_server, kubeconfig_for, tmp_path,
                                                                     docker_mount_parser, name):
    """docker's -v splits at ':' (a folder holding one gave a -v that cannot work); --mount is one CSV record
    (a ',' or '"' must be quoted). Checked by pasting each line into sh and the mount into docker's parser."""
    result = run("reproduce", "--dir", tmp_path / name, kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert recipe_path(result.stdout) == str(tmp_path / name / "recipe.json")
    folder = str(tmp_path / name / run_folder(api_server, "plan-active"))
    docker, oras, diff = (pasted_argv(line, tmp_path) for line in command_lines(result.stdout))
    assert "-v" not in docker and docker.count("--mount") == 1
    assert docker_mount_parser(docker[docker.index("--mount") + 1]) == [
        ("type", "bind"), ("source", str(tmp_path / name)), ("target", "/work")]
    assert oras[:3] == ["pull", "--output", os.path.join(folder, "bundle")]
    assert diff == ["-r", os.path.join(folder, "rendered"), os.path.join(folder, "bundle")]
    assert not (tmp_path / "PWNED").exists()


def _planted(tmp_path, owner=None, mode=0o777):
    """The issue's trap: a shared folder holding aicr-reproduce (``owner``, ``mode``) whose rendered and
    bundle are symbolic links to one folder, so that `diff -r` would compare a folder with itself."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    trap = shared / "aicr-reproduce"
    trap.mkdir()
    same = tmp_path / "same"
    same.mkdir()
    os.symlink(str(same), str(trap / "rendered"))
    os.symlink(str(same), str(trap / "bundle"))
    os.chmod(str(trap), mode)
    if owner is not None:
        os.chown(str(trap), owner, owner)
    return shared, trap


@pytest.mark.parametrize("owner,mode,words", [
    (65534, 0o777, "belongs to uid 65534"), (65534, 0o755, "belongs to uid 65534"),
    (None, 0o777, "writable by others"), (None, 0o775, "writable by others"), (None, 0o1777, "writable by others")],
    ids=["other-0777", "other-0755", "mine-0777", "mine-0775", "mine-1777"])
def test_a_dir_another_user_made_or_can_change_is_refused(run, api_server, kubeconfig_for, tmp_path, owner, mode,
                                                          words):
    shared, trap = _planted(tmp_path, owner, mode)
    result = run("reproduce", kubeconfig=kubeconfig_for(), cwd=str(shared))
    line = one_error_line(result, str(trap), words)
    assert "verified" not in result.stdout and result.stdout == ""
    assert sorted(os.listdir(str(trap))) == ["bundle", "rendered"]  # nothing written there


@pytest.mark.parametrize("mode,owner,words", [(0o777, None, "writable by others without the sticky bit"),
                                              (0o775, None, "writable by others without the sticky bit"),
                                              (0o755, 65534, "belongs to uid 65534")],
                         ids=["mine-0777", "mine-0775", "other-0755"])
def test_a_dir_under_a_folder_others_can_change_is_refused(run, api_server, kubeconfig_for, tmp_path, mode, owner,
                                                           words):
    """Another user who may rename entries of a parent could swap --dir for theirs after the run."""
    parent = tmp_path / "parent"
    parent.mkdir()
    mine = parent / "mine"
    mine.mkdir(mode=0o700)
    os.chmod(str(parent), mode)
    if owner is not None:
        os.chown(str(parent), owner, owner)
    for folder in (mine, mine / "new"):
        result = run("reproduce", "--dir", folder, kubeconfig=kubeconfig_for())
        one_error_line(result, str(parent), words)
        assert os.listdir(str(mine)) == []


def test_a_sticky_shared_parent_is_fine_for_a_folder_of_ones_own(run, api_server, kubeconfig_for, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    result = run("reproduce", kubeconfig=kubeconfig_for(), cwd=str(shared))
    assert result.returncode == 0, result.stderr
    made = shared / "aicr-reproduce"
    assert os.stat(str(made)).st_mode & 0o777 == 0o700
    assert os.path.dirname(recipe_path(result.stdout)) == str(made)


def test_a_symlinked_dir_another_user_planted_is_refused(run, api_server, kubeconfig_for, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    target = tmp_path / "victim"
    target.mkdir(mode=0o700)
    os.symlink(str(target), str(shared / "aicr-reproduce"))
    os.lchown(str(shared / "aicr-reproduce"), 65534, 65534)
    result = run("reproduce", kubeconfig=kubeconfig_for(), cwd=str(shared))
    one_error_line(result, str(shared / "aicr-reproduce"), "symbolic link", "uid 65534")
    assert os.listdir(str(target)) == []


def test_each_run_writes_to_a_new_private_folder_that_its_commands_name(run, api_server, kubeconfig_for, tmp_path):
    """rendered/ and bundle/ already in --dir (here symbolic links to one folder, made by the user) are never
    named: each run makes its own folder (mode 0700) and the three commands use it."""
    folder = tmp_path / "out"
    folder.mkdir(mode=0o700)
    same = tmp_path / "same"
    same.mkdir()
    os.symlink(str(same), str(folder / "rendered"))
    os.symlink(str(same), str(folder / "bundle"))
    seen = []
    for _ in range(2):
        result = run("reproduce", "--dir", folder, kubeconfig=kubeconfig_for())
        assert result.returncode == 0, result.stderr
        assert recipe_path(result.stdout) == str(folder / "recipe.json")
        docker, oras, diff = (shlex.split(line) for line in command_lines(result.stdout))
        made = os.path.dirname(oras[3])
        assert os.path.dirname(made) == str(folder) and made not in seen
        seen.append(made)
        assert os.lstat(made).st_mode & 0o7777 == 0o700 and os.listdir(made) == []
        assert docker[docker.index("--mount") + 1] == "type=bind,source=%s,target=/work" % folder
        assert docker[-1] == "/work/%s/rendered" % os.path.basename(made)
        assert oras[3] == os.path.join(made, "bundle")
        assert diff[2:] == [os.path.join(made, "rendered"), os.path.join(made, "bundle")]
    assert os.listdir(str(same)) == []


def test_a_symlinked_dir_of_ones_own_is_followed_and_the_commands_name_its_real_path(run, api_server,
                                                                                      kubeconfig_for, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(str(real), str(tmp_path / "link"))
    result = run("reproduce", "--dir", tmp_path / "link" / "out", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert recipe_path(result.stdout) == str(real / "out" / "recipe.json")
    assert (real / "out" / run_folder(api_server, "plan-active")).is_dir()
    assert os.stat(str(real / "out")).st_mode & 0o777 == 0o700
    assert all(str(tmp_path / "link") not in line for line in command_lines(result.stdout))


@pytest.mark.parametrize("make,words", [
    (lambda d: d.write_text("x"), "is not a folder (a file)"),
    (lambda d: os.symlink("nowhere", str(d)), "is not a folder (a broken symbolic link to nowhere)"),
], ids=["file", "broken-link"])
def test_a_dir_that_is_no_folder_is_refused(run, api_server, kubeconfig_for, tmp_path, make, words):
    target = tmp_path / "out"
    make(target)
    for folder, where in ((target, ""), (target / "deeper", ": %s above it" % target)):
        result = run("reproduce", "--dir", folder, kubeconfig=kubeconfig_for())
        one_error_line(result, "--dir %s %s" % (folder, words.replace("is not a folder", "is not a folder" + where)))
    assert sorted(os.listdir(str(tmp_path))) == sorted(["home", "kubeconfig-1", "kubeconfig-2", "out"])


def test_a_missing_folder_swapped_for_a_symlink_while_it_is_made_is_never_followed(tmp_path, monkeypatch):
    """--dir shared/a/b with a and b missing: between the mkdir of a and that of b, another user (in a sticky
    shared folder; this machine's fs.protected_symlinks may be 0) replaces a with a symbolic link to a folder of
    their choice. The mkdir of b went through the path, so it made b there as the victim (the clean-up then
    removed it through the link again, or whatever the link led to by then); now each folder is
    made relative to an open descriptor of the one before it, so the link is refused and nothing is made."""
    from kubectl_aicr.commands import reproduce
    from kubectl_aicr.errors import RefusedError

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = []
    real_mkdir = os.mkdir

    def mkdir_then_swap(path, mode=0o777, *, dir_fd=None):
        if not planted and os.path.basename(str(path)) == "a":  # the other user wins the race for shared/a
            planted.append(path)
            os.symlink(str(elsewhere), str(shared / "a"))
            raise FileExistsError(17, "File exists")
        done = real_mkdir(path, mode) if dir_fd is None else real_mkdir(path, mode, dir_fd=dir_fd)
        made_there.extend(os.listdir(str(elsewhere)))  # (the clean-up would remove it later, through the link)
        return done

    made_there = []
    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    with pytest.raises(RefusedError) as refused:
        reproduce.trusted_folder(str(shared / "a" / "b"))
    assert planted and made_there == [] and os.listdir(str(elsewhere)) == []  # nothing made where the link leads
    assert "replaced by a symbolic link" in str(refused.value)
