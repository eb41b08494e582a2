"""The repository's own documentation (docs/) stays true to the code, and nothing cites a file outside it.

- docs/flags.md's flag table lists exactly the flags of ``cli.FLAGS``, with the defaults cli.py
  applies.
- docs/operator-api.md names every group, resource, label, annotation, key and enum value
  ``objects.py`` uses.
- Every ``docs/*.md`` that code, tests or the README cite, and every relative link in docs/ and the
  README, is a file of the repository; no product module cites the spec folder outside it.
"""

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
