"""reproduce, end to end: the plan's recipe on disk, verified, and three commands that are safe to paste."""

import copy
import hashlib
import json
import os
import shlex
import subprocess

import pytest

from tests.support.text import command_lines

pytestmark = pytest.mark.e2e


def plan(api_server, role):
    return api_server.fixture(role)


def digest_of(api_server, role):
    return plan(api_server, role)["metadata"]["annotations"]["operator.aicr.run/desired-state-digest"]


def only_reads(api_server):
    return all(r.method == "GET" for r in api_server.requests)


def test_no_argument_takes_the_active_plan(run, api_server, kubeconfig_for, tmp_path):
    folder = tmp_path / "out"
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
    assert argv[-4 - len(flags):-4] == flags  # the plan's flags, then reproduce's own, which win
    assert argv[-4:] == ["--recipe", "/work/recipe.json", "--output", "/work/rendered"]
    assert shlex.split(oras) == ["oras", "pull", "--output", str(folder / "bundle"), active["data"]["bundle"]]
    assert shlex.split(diff) == ["diff", "-r", str(folder / "rendered"), str(folder / "bundle")]
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
    assert (tmp_path / "recipe.json").read_bytes() == plan(api_server, "plan-candidate")["data"]["recipe.json"].encode()


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


def test_existing_recipe_is_replaced_and_a_planted_symlink_is_not_followed(run, api_server, kubeconfig_for,
                                                                           tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, folder / "recipe.json")
    result = run("reproduce", "--dir", folder, kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious"
    assert not os.path.islink(folder / "recipe.json")
    recipe = (folder / "recipe.json").read_bytes()
    assert "sha256:" + hashlib.sha256(recipe).hexdigest() == plan(api_server, "plan-active")["data"]["recipeDigest"]
    assert sorted(os.listdir(folder)) == ["recipe.json"]  # no temporary file left behind


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
    assert (tmp_path / "recipe.json").read_bytes() == plan(api_server, "plan-candidate")["data"]["recipe.json"].encode()


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
    oras, diff = command_lines(result.stdout)[1:]
    assert "\\u" not in oras + diff
    for line, expected in ((oras, ["oras", "pull", "--output", str(here / "out" / "bundle")]),
                           (diff, ["diff", "-r", str(here / "out" / "rendered"), str(here / "out" / "bundle")])):
        shim = tmp_path / "shim"
        shim.mkdir(exist_ok=True)
        (shim / expected[0]).write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n")
        os.chmod(shim / expected[0], 0o755)
        ran = subprocess.run(["sh", "-c", line], stdout=subprocess.PIPE, check=True,
                             env={"PATH": "%s:/usr/bin:/bin" % shim, "LC_ALL": "C"}).stdout
        assert ran.split(b"\0")[:-1][:len(expected) - 1] == [os.fsencode(w) for w in expected[1:]]
    assert (here / "out" / "recipe.json").exists()
