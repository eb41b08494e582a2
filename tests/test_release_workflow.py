"""The release workflow (.github/workflows/on-tag.yaml): linted by actionlint and zizmor, building with the
Makefile's own release command, attesting and publishing every file `make release` writes, least privilege.

The seed's install checks a file's origin with `gh attestation verify ... --signer-workflow
NVIDIA/aicr/.github/workflows/on-tag.yaml --source-ref refs/tags/vX`; this is that workflow.
"""

import fnmatch
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.support.plugin import ROOT, VENV_BIN

WORKFLOW = os.path.join(ROOT, ".github", "workflows", "on-tag.yaml")
PINNED_RE = re.compile(r"\A[A-Za-z0-9-]+/[A-Za-z0-9._-]+@[0-9a-f]{40}\Z")


def workflow():
    with open(WORKFLOW) as handle:
        return yaml.safe_load(handle)


def steps(job):
    return workflow()["jobs"][job]["steps"]


def lint(tool, path):
    command = {"actionlint": [os.path.join(VENV_BIN, "actionlint"), "-no-color", path],
               "zizmor": [os.path.join(VENV_BIN, "zizmor"), "--offline", "--no-progress", "--persona=pedantic",
                          path]}[tool]
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          cwd=ROOT)


@pytest.mark.parametrize("tool", ["actionlint", "zizmor"])
def test_the_workflow_passes_the_linter(tool):
    result = lint(tool, WORKFLOW)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("tool,before,after", [
    # zizmor: an action pinned by a moving tag, and a tag name pasted into a shell script.
    ("zizmor", "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1", "actions/checkout@v7"),
    ("zizmor", 'if [ "$TAG" != "v$version" ]; then', 'if [ "${{ github.ref_name }}" != "v$version" ]; then'),
    # actionlint: a step output that does not exist, and a permission GitHub does not know.
    ("actionlint", "steps.attest.outputs.bundle-path", "steps.attestt.outputs.bundle-path"),
    ("actionlint", "id-token: write", "id-tokens: write"),
])
def test_the_linters_catch_what_they_are_here_for(tool, before, after, tmp_path):
    """Each linter fails on a copy of the workflow with one such mistake, so a clean run means something."""
    text = open(WORKFLOW).read()
    assert before in text
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    broken = folder / "on-tag.yaml"
    broken.write_text(text.replace(before, after))
    result = lint(tool, str(broken))
    assert result.returncode != 0, result.stdout


def test_every_action_is_pinned_by_commit():
    uses = [step["uses"] for job in workflow()["jobs"].values() for step in job["steps"] if "uses" in step]
    assert uses and all(PINNED_RE.match(u) for u in uses), uses
    assert any(u.startswith("actions/attest-build-provenance@") for u in uses)
    for line in open(WORKFLOW):
        if "uses:" in line:
            assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line.rstrip()), line  # the version, for readers


def test_permissions_are_least_privilege():
    wf = workflow()
    assert wf["permissions"] == {}
    jobs = wf["jobs"]
    assert set(jobs) == {"build", "publish"}
    # The build runs the project's code: it may sign and record attestations, never write the repository.
    assert jobs["build"]["permissions"] == {"contents": "read", "id-token": "write", "attestations": "write"}
    # The publish job runs no project code: it uploads what the build attested.
    assert jobs["publish"]["permissions"] == {"contents": "write"}
    assert jobs["publish"]["needs"] == "build"
    assert not any("run" in step and ("make" in step["run"] or "build.py" in step["run"])
                   for step in steps("publish"))
    checkout = next(s for s in steps("build") if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False


def test_it_runs_on_version_tags_only():
    wf = workflow()
    trigger = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as a boolean
    assert list(trigger) == ["push"] and list(trigger["push"]) == ["tags"]
    (pattern,) = trigger["push"]["tags"]
    assert pattern.startswith("v")


def _makefile_recipe(target):
    lines = open(os.path.join(ROOT, "Makefile")).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(target + ":"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_it_builds_with_the_makefiles_release_command():
    """One step builds, and it is `make release` (whose recipe is build.py --release); nothing else builds."""
    assert _makefile_recipe("release") == ["$(PYTHON) build.py --release"]
    runs = [step["run"].strip() for step in steps("build") if "run" in step]
    builders = [r for r in runs if "make" in r.split() or "build.py" in r or "zipapp" in r]
    assert builders == ["make release"]
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under make test
    dry = subprocess.run(["make", "--no-print-directory", "-n", "release", "PYTHON=python3"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, universal_newlines=True, check=True)
    assert dry.stdout.strip() == "python3 build.py --release"
    order = [step.get("run", step.get("uses", "")).strip() for step in steps("build")]
    attest = next(i for i, s in enumerate(order) if s.startswith("actions/attest-build-provenance@"))
    assert order.index("make release") < attest  # attested after it is built, nothing built after


def test_it_attests_and_publishes_every_file_make_release_writes(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("build.py", "LICENSE", ".python-versions"):
        shutil.copy2(os.path.join(ROOT, name), str(tree / name))
    shutil.copytree(os.path.join(ROOT, "kubectl_aicr"), str(tree / "kubectl_aicr"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "build.py", "--release"], cwd=str(tree), check=True, stdout=subprocess.DEVNULL)
    written = sorted("dist/" + name for name in os.listdir(str(tree / "dist")))
    summed = sorted("dist/" + line.split("  ")[1] for line in open(str(tree / "dist" / "SHA256SUMS")).read().splitlines())
    assert sorted(summed + ["dist/SHA256SUMS"]) == written
    attest = next(s for s in steps("build") if s.get("uses", "").startswith("actions/attest-build-provenance@"))
    patterns = attest["with"]["subject-path"].split()
    assert sorted(p for p in written if any(fnmatch.fnmatch(p, pat) for pat in patterns)) == written
    upload = next(s for s in steps("build") if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"].split() == ["dist/*", "attestations.jsonl"]
    keep = next(s for s in steps("build") if "attestations.jsonl" in s.get("run", ""))
    assert keep["env"]["BUNDLE"] == "${{ steps.%s.outputs.bundle-path }}" % attest["id"]
    publish = steps("publish")[-1]["run"]
    assert "gh release create" in publish and publish.rstrip().endswith("release/dist/* release/attestations.jsonl")


def test_the_readme_install_verifies_this_workflow_online_and_offline():
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert "--signer-workflow NVIDIA/aicr/.github/workflows/on-tag.yaml" in readme
    assert '--source-ref "refs/tags/v${VERSION}"' in readme
    assert "--bundle attestations.jsonl" in readme and "--custom-trusted-root trusted_root.jsonl" in readme
    assert "gh attestation trusted-root" in readme
    assert "sha256sum --check" in readme


def test_it_installs_exactly_the_pinned_interpreters_before_building():
    """The bytecode interpreters are the ones .python-versions pins (build.py reads the same file and refuses
    any other patch version): setup-python installs that file's list, nothing else, before `make release`."""
    import build
    pins = build.pinned()
    lines = [line.strip() for line in open(os.path.join(ROOT, build.PIN_FILE)) if line.strip()]
    assert lines == [pins[v] for v in build.SUPPORTED]  # one exact X.Y.Z per supported version, in order
    order = [step.get("run", step.get("uses", "")).strip() for step in steps("build")]
    setups = [i for i, s in enumerate(order) if s.startswith("actions/setup-python@")]
    assert len(setups) == 1 and setups[0] < order.index("make release")
    setup = steps("build")[setups[0]]
    assert setup["with"]["python-version-file"] == build.PIN_FILE
    assert "python-version" not in setup["with"]  # no second list of versions to drift from the pins
    assert setup["with"].get("check-latest") in (None, False)  # exact versions, never a newer patch
    assert not any(step.get("env", {}).get("AICR_BUILD_PYTHONS") for step in steps("build"))  # found on PATH
    assert "AICR_BUILD_PYTHONS" not in workflow().get("env", {})
