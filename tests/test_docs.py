"""The repository's own documentation (docs/) stays true to the code, and nothing cites a file outside it.

- docs/flags.md's flag table lists exactly the flags of ``cli.FLAGS``, with the defaults cli.py
  applies.
- docs/operator-api.md names every group, resource, label, annotation, key and enum value
  ``objects.py`` uses.
- Every ``docs/*.md`` that code, tests or the README cite, and every relative link in docs/ and the
  README, is a file of the repository; no product module cites the spec folder outside it.
"""

import json
import os
import re

from kubectl_aicr import cli
from kubectl_aicr.aicr import objects

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def _section(text, heading):
    """The text under a Markdown heading (``## Flags``), up to the next heading of the same or higher level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n") + len(heading) + 1
    following = re.compile(r"^#{1,%d} " % len(level), re.M).search(text, start)
    return text[start:following.start() if following else len(text)]


def _table_flags(section):
    """The flags in the first column of the Markdown table rows of ``section``: ``--name``."""
    return [match.group(1) for match in re.finditer(r"^\| `(--[a-z-]+)", section, re.M)]


def test_the_flag_table_lists_exactly_the_flags_cli_defines():
    flags = _section(_read("docs", "flags.md"), "## Flags")
    in_table = _table_flags(flags.split("### ")[0])
    assert in_table == [flag for flag, _, _ in cli.FLAGS]
    for flag, metavar, _ in cli.FLAGS:
        written = "%s %s" % (flag, metavar) if metavar else flag  # a switch (``--all``) has no value
        assert "| `%s` |" % written in flags
    reason_rule = "1 to %d characters" % cli.MAX_REASON_CHARS
    for default in (cli.DEFAULT_OPERATOR_NAMESPACE, cli.DEFAULT_REPRODUCE_DIR, reason_rule):
        assert default in flags


def test_the_flag_table_names_every_command():
    text = _read("docs", "flags.md")
    for name in cli.COMMANDS:
        assert "kubectl aicr %s" % cli.USAGES[name].split(" [")[0].split(" --")[0] in text, name


def test_the_operator_api_page_names_everything_objects_uses():
    text = _read("docs", "operator-api.md")
    names = [objects.GROUP + "/" + objects.VERSION, objects.ROLLOUTS, objects.RUNTIMES, objects.RUNTIME_NAME,
             objects.OUTCOME_LABEL, objects.ROLE_LABEL, objects.DIGEST_ANNOTATION, objects.SOURCE_ANNOTATION,
             objects.ASSESSMENT_PREFIX, objects.PLAN_PREFIX, objects.REPORT_KEY, objects.SOURCE_APPLICATIONS,
             objects.SELF_SUBJECT_REVIEW_PATH, cli.DEFAULT_OPERATOR_NAMESPACE]
    names += list(objects.PHASES) + list(objects.OUTCOMES) + list(objects.STEP_STATES)
    missing = [name for name in names if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), text)]
    assert not missing, "docs/operator-api.md does not name %s" % missing


def _repository_files(top, suffixes):
    for folder, subfolders, files in os.walk(os.path.join(ROOT, top)):
        subfolders[:] = [name for name in subfolders if not name.startswith(".") and name != "__pycache__"]
        for name in files:
            if name.endswith(suffixes):
                yield os.path.join(folder, name)


def test_every_cited_docs_page_exists():
    cited = {}
    sources = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "build.py")]
    for top in ("kubectl_aicr", "tests", "benchmarks", "docs"):
        sources += _repository_files(top, (".py", ".md", ".yaml"))
    for path in sources:
        with open(path, encoding="utf-8") as f:
            for page in re.findall(r"\bdocs/([a-z][a-z0-9-]*\.md)", f.read()):
                cited.setdefault(page, []).append(os.path.relpath(path, ROOT))
    assert {"operator-api.md", "flags.md", "architecture.md"} <= set(cited)
    missing = {page: where for page, where in cited.items() if not os.path.isfile(os.path.join(DOCS, page))}
    assert not missing, "cited but not in docs/: %s" % missing


def test_relative_links_in_the_docs_and_readme_resolve():
    pages = [os.path.join(ROOT, "README.md")] + sorted(_repository_files("docs", (".md",)))
    broken = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", f.read()):
                if "://" in target:
                    continue
                if not os.path.exists(os.path.join(os.path.dirname(page), target)):
                    broken.append((os.path.relpath(page, ROOT), target))
    assert not broken


def test_the_product_cites_nothing_outside_the_repository():
    outside = []
    for path in _repository_files("kubectl_aicr", (".py",)):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if "shared/" in line:
                    outside.append("%s:%d" % (os.path.relpath(path, ROOT), number))
    assert not outside, "cite docs/ instead: %s" % outside


# ---------------------------------------------------------------------------------------------
# What the documents say a write tests is what the plugin sends


WRITE_TARGETS = {"approve": ("awaiting-approval", ["--reason", "r"]),
                 "revoke": ("approved-rolling-out", ["--reason", "r"]),
                 "acknowledge": ("awaiting-acknowledgement", [])}


def _documented_writes():
    """{command: ([the JSON pointers its patch tests, in order], the path its ``add`` writes)} from the table
    of operator-api.md's "Writes" section."""
    section = _section(_read("docs", "operator-api.md"), "## Writes (project's choice)")
    documented = {}
    for match in re.finditer(r"^\| (approve|revoke|acknowledge) \| (.*?) \| `add (\S+) ", section, re.M):
        documented[match.group(1)] = (re.findall(r"`(/[^`]*)`", match.group(2)), match.group(3))
    return documented


def _covers(test_path, pointer):
    """A ``test`` on ``test_path`` holds the fact at ``pointer`` when it is that path, or an ancestor of it."""
    return pointer == test_path or pointer.startswith(test_path + "/")


def test_the_documents_say_what_the_write_tests_and_it_is_what_is_sent(run, api_server, kubeconfig_for):
    """docs/operator-api.md lists, per command, the pointers its patch tests; a --dry-run=client patch of
    each command tests exactly those (or the first absent member on the way, with null), in that order, then
    adds what the table says; none tests metadata.resourceVersion."""
    documented = _documented_writes()
    assert sorted(documented) == sorted(WRITE_TARGETS)
    for command, (role, extra) in WRITE_TARGETS.items():
        result = run(command, api_server.fixture_name(role), *extra, "--dry-run=client",
                     kubeconfig=kubeconfig_for("alice@example.com"))
        assert result.returncode == 0, result.stderr
        line, = [x for x in result.stdout.splitlines() if x.startswith("would send: PATCH ")]
        sent = json.loads(line.split(") ", 1)[1])
        tests = [op for op in sent if op["op"] == "test"]
        assert sent[:len(tests)] == tests and [op["op"] for op in sent[len(tests):]] == ["add"]
        pointers, added = documented[command]
        covering = [[t["path"] for t in tests if _covers(t["path"], p)] for p in pointers]
        assert all(len(paths) == 1 for paths in covering), (command, covering)
        assert [t["path"] for t in tests] == sorted({p[0] for p in covering}, key=[p[0] for p in covering].index)
        for test in tests:
            if test["path"] not in pointers:
                assert test["value"] is None, (command, test)
        assert "/metadata/resourceVersion" not in [t["path"] for t in tests]
        assert sent[-1]["path"] in (added, added[:-2])  # ``/-`` appends; the whole list when there is none


def test_no_document_says_a_write_is_pinned_to_the_resource_version():
    """Every sentence of the docs and the README that ties the write to resourceVersion says it is not tested."""
    wrong = []
    for path in [os.path.join(ROOT, "README.md")] + sorted(_repository_files("docs", (".md",))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for sentence in re.split(r"(?<=[.;])\s+|\n\n|\n\|", text):
            if "resourceVersion" in sentence and re.search(r"\b(pinned|writes?|patch)\b", sentence) and \
                    not re.search(r"\b(never|not|no)\b", sentence):
                wrong.append("%s: %s" % (os.path.relpath(path, ROOT), " ".join(sentence.split())))
    assert not wrong
