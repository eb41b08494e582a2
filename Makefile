# kubectl-aicr. `make demo` and `make test` are the two set-up commands (README).
# Test tools come from requirements-test.txt into .venv; nothing from them ships.

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)

.PHONY: all build release test test-all test-pythons test-real real-apiserver demo serve bench clean venv

all: build

$(STAMP): requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $(STAMP)

venv: $(STAMP)

build:
	$(PYTHON) build.py

# Release files (dist/kubectl-aicr-<os>-<arch>, their krew tarballs, SHA256SUMS) and plugins/aicr.yaml.
# Run it and commit plugins/aicr.yaml whenever kubectl_aicr/ changes: a test checks the manifest.
# The release workflow (.github/workflows/on-tag.yaml) runs this target on a tag and attests its files
# (tests/test_release_workflow.py checks that, and lints the workflow with actionlint and zizmor).
# The bytecode interpreters: exactly the CPython patch versions pinned in .python-versions, found (build.py's
# docstring) from AICR_BUILD_PYTHONS="3.8=/path/to/python 3.9=..." if set, else $(PYENV_ROOT)/versions/X.Y.Z,
# else python3.Y on PATH; the build prints each one's full version and refuses any other patch version.
release:
	$(PYTHON) build.py --release

# The main tier: quick (minutes on two cores).
test: $(STAMP) build
	$(VPY) -m pytest -q -n 2 tests

# Every CPython 3.8 or newer under $(PYENV_ROOT)/versions runs the built file's tests.
test-pythons: $(STAMP) build
	$(VPY) tests/run_pythons.py --pyenv-root "$(PYENV_ROOT)"

# A real kube-apiserver + etcd, built from the Go module proxy at the versions of
# tests/real_apiserver/versions.env (tests/real_apiserver/README.md); cached in
# ~/.cache/kubectl-aicr/real-apiserver/<version>, so a second run is instant.
# KUBE_VERSION=v1.37.2 (one of them) builds and tests only that one; default: all.
KUBE_VERSION ?=
real-apiserver:
	bash tests/real_apiserver/build.sh $(KUBE_VERSION)

# The `real` tests once per version, each run preceded by its server's --version line; every version runs,
# and the target fails if any did.
test-real: $(STAMP) build real-apiserver
	@failed=""; for v in $$(bash tests/real_apiserver/build.sh --check $(KUBE_VERSION) 2>/dev/null | cut -d' ' -f1); do \
	  bin=$$(bash tests/real_apiserver/build.sh --check $$v 2>/dev/null | cut -d' ' -f2); \
	  echo "== real tier on $$($$bin --version) ($$bin)"; \
	  AICR_REAL_APISERVER_VERSION=$$v AICR_REQUIRE_REAL_APISERVER=1 $(VPY) -m pytest -q -m real tests || failed="$$failed $$v"; \
	done; if [ -n "$$failed" ]; then echo "== real tier failed on:$$failed"; exit 1; fi

test-all: test test-pythons test-real

demo: $(STAMP) build
	$(VPY) -m tests.demo

# The playground: the test API server with the demo fixtures, in the foreground until Ctrl-C. It prints the
# export lines for a second terminal and what each fixture rollout shows (README "Try it").
serve: $(STAMP) build
	$(VPY) -m tests.serve

bench: $(STAMP) build
	$(VPY) benchmarks/run.py

clean:
	rm -rf dist build .pytest_cache .hypothesis
