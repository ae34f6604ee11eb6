# Two commands on a fresh machine with Python 3.11: `make course` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the notebooks' kernelspec (course/twins.KERNELSPEC): one name keeps a JupyterLab tab from opening "modified"
KERNEL_DISPLAY_NAME := Python 3 (ipykernel)
# The CPU build of torch for CI and laptops: pinned in constraints.txt and taken from PyTorch's CPU wheel
# index when that is reachable (PyPI's torch for Linux is the multi-GB CUDA build). On a GPU box, install
# your torch into .venv first and run `make setup CONSTRAINTS= TORCH_INDEX=`. Only torch itself comes from that
# index (--no-deps); its dependencies come with the project's, from the default index.
CONSTRAINTS ?= constraints.txt
PIP_CONSTRAINT := $(if $(CONSTRAINTS),-c $(CONSTRAINTS),)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# Learners start in the student edition (stubs where the solutions are); notebooks/ holds every solution.
# `make lab LANG=zh_CN` opens the Chinese student edition instead (student-zh_CN/, built by `verlstudy edition
# zh_CN --student` when missing), its checkers' verdicts and hints in Chinese (docs/translating.md)
LAB_LANG := $(if $(filter zh zh_CN zh_CN.%,$(LANG)),zh_CN,)
LAB_DIR ?= $(if $(LAB_LANG),student-$(LAB_LANG),student)
# JupyterLab refuses to start as root (most containers and cloud workshop machines) unless told it may
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)
# Earlier verl releases some lessons compare with (04: build_vlm_attn_mask_thd before #7702; 09: the 0.9.0 tree),
# each unpacked without dependencies into $(VENV)/verl-releases/<version> and read as files, never imported.
VERL_RELEASES ?= 0.9.0
# The stamp is named for the content of what setup installs from (not the files' times), so a .venv restored from
# CI's cache, whose stamp is older than the fresh checkout, skips setup when nothing it installs from changed.
SETUP_INPUTS := pyproject.toml $(CONSTRAINTS) requirements.lock requirements-upstream.txt
SETUP_HASH := $(shell $(PYTHON) -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode() + b"".join(open(f, "rb").read() for f in sys.argv[2:])).hexdigest()[:16])' "$(VERL_RELEASES)" $(SETUP_INPUTS) 2>/dev/null)
STAMP := $(VENV)/.installed-$(SETUP_HASH)
WORKERS ?= 2
export TQDM_DISABLE := 1
export TORCH_CPP_LOG_LEVEL := ERROR
export OMP_NUM_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: setup upstream course test test-fast lab lab-lock lint lock lowest extremes student site verify-upstream clean
.PHONY: translations

# The lowest Python pyproject.toml's requires-python allows (a test keeps the two equal), checked before setup installs.
MIN_PYTHON := 3.11
PYTHON_OK := import sys; sys.exit(0 if sys.version_info >= tuple(map(int, "$(MIN_PYTHON)".split("."))) else "setup: verlstudy needs Python $(MIN_PYTHON) or newer (3.11-3.13 are tested), $(PYTHON) is " + sys.version.split()[0] + ": run make setup PYTHON=python3.12, say")
# verl without its dependencies (pure Python; the lessons read its source, never run it) and whatever Python its
# metadata names (0.9.1 says <3.13), then the earlier releases lessons read as files
define install_upstream
	$(1)/bin/python -m pip install -q --no-deps --ignore-requires-python -r requirements-upstream.txt
	for v in $(VERL_RELEASES); do $(1)/bin/python -m pip install -q --no-deps --ignore-requires-python --upgrade --target $(1)/verl-releases/$$v verl==$$v || exit 1; done
endef

$(STAMP):
	@$(PYTHON) -c '$(PYTHON_OK)'
	@echo "setup: creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup: installing torch $$(sed -n 's/^torch==//p' $(CONSTRAINTS) 2>/dev/null) (the CPU wheel is about 190 MB to download on a fresh machine; a minute or two)"
	$(BIN)/python -m pip install -q --retries 1 --no-deps $(PIP_CONSTRAINT) $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),) torch
	@echo "setup: installing the locked packages (requirements.lock), the course, and verl $(VERL_RELEASES) for comparisons"
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(call install_upstream,$(VENV))
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "$(KERNEL_DISPLAY_NAME)" >/dev/null
	rm -f $(VENV)/.installed $(VENV)/.installed-*
	touch $(STAMP)
	@echo "setup: done ($(BIN)/verlstudy doctor checks it)"

setup: $(STAMP)

## verl and the earlier releases lessons read, without dependencies, into $(VENV): setup does it; a conda
## environment (environment.yml) gets it with `make upstream VENV=$$CONDA_PREFIX`
upstream:
	$(call install_upstream,$(VENV))

## set up, execute every lesson into build/executed/, write build/report.md; a fresh earlier run (same notebooks,
## sources and parameters: build/executed/run-record.json) stands, and a stale or partial one is named and rerun
course: setup
	$(BIN)/verlstudy run --if-stale --workers $(WORKERS) --out build/executed --report build/report.md --junit build/junit.xml --results build/run.json

## set up, then every test: the import rule, unit tests and nbval in parallel (execution 1 of each notebook), then
## the course run that writes build/report.md and the JUnit files (execution 2), which the course_run tests check
test: setup
	$(BIN)/lint-imports --no-cache
	mkdir -p build && rm -f build/executions.log
	VERLSTUDY_EXECUTION_LOG=$(CURDIR)/build/executions.log $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile -m "not course_run" --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --junitxml=build/junit-tests.xml tests notebooks
	VERLSTUDY_EXECUTION_LOG=$(CURDIR)/build/executions.log $(BIN)/verlstudy run --device cpu --workers $(WORKERS) --out build/executed --report build/report.md --junit build/junit.xml --results build/run.json
	VERLSTUDY_EXECUTION_LOG=$(CURDIR)/build/executions.log VERLSTUDY_COURSE_RESULTS=build/run.json $(BIN)/python -m pytest -m course_run --junitxml=build/junit-course-tests.xml tests
	$(BIN)/python tools/count_executions.py build/executions.log build/junit-tests.xml

## unit tests only (seconds)
test-fast: setup
	$(BIN)/python -m pytest -n $(WORKERS) -m "not course_run and not slow" tests

## JupyterLab for learners on the student edition, lesson 00 first (writes student/ when missing; LAB_DIR=notebooks
## opens the full edition, with every solution); kept out of the test path: JupyterLab slows every nbformat import
lab: setup
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r requirements-lab.lock
	@if [ "$(LAB_DIR)" = student ] && [ ! -e student/00_start_here.ipynb ]; then $(BIN)/verlstudy student --out student; fi
	@if [ -n "$(LAB_LANG)" ] && [ "$(LAB_DIR)" = student-$(LAB_LANG) ] && [ ! -e $(LAB_DIR)/00_start_here.ipynb ]; then $(BIN)/verlstudy edition $(LAB_LANG) --student --out $(LAB_DIR); fi
	@echo "JupyterLab on $(LAB_DIR)/, starting with 00_start_here.ipynb: open the http://127.0.0.1:8888/lab?token=... URL it prints below (Ctrl-C stops it)"
	@if [ "$(LAB_DIR)" = student ]; then echo "(the full edition, every solution in place, is notebooks/: open it after you have tried)"; fi
	VERLSTUDY_LANG=$(LAB_LANG) $(BIN)/jupyter lab $(LAB_ARGS) --ServerApp.root_dir=$(LAB_DIR) $(LAB_DIR)/00_start_here.ipynb

## compare each lesson's helper with upstream verl's own function (record the version with RECORD=--record)
verify-upstream: setup
	$(BIN)/verlstudy verify-upstream $(RECORD)

lint: setup
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools

## update the translated editions' catalogs (notebooks/locale/*/NN_topic.po) from the English notebooks: a new markdown
## cell is added untranslated, a changed one marked fuzzy with the English it was translated from kept beside it;
## `verlstudy edition zh_CN --check` (run by make test) then names every cell a translator must redo
translations: setup
	$(BIN)/verlstudy edition zh_CN --update

## the student edition (solutions replaced by stubs) in student/; notebooks a learner changed need FORCE=1
student: setup
	VERLSTUDY_FORCE_HINT="run make student FORCE=1" $(BIN)/verlstudy student --out student $(if $(FORCE),--force,)

## render the course run to HTML in site/ (open site/index.html); `course` executes only when its run is stale
site: course
	$(BIN)/verlstudy site --from build/executed --out site

## every lesson's claims on CASES parameter sets drawn from its validated space: the corners at seed 0, then the
## corners at seeds 1-9 and random draws (tools/extremes.py; about 10 s a set; weekly in CI, not in make test)
CASES ?= 12
extremes: setup
	$(BIN)/python tools/extremes.py --workers $(WORKERS) --cases $(CASES)

## recompile requirements.lock from pyproject.toml (keeps today's pins; UPGRADE=1 takes the newest allowed)
lock: setup
	$(BIN)/python -m pip install -q "uv==$$($(BIN)/python tools/lock.py --uv-version)"
	$(BIN)/python tools/lock.py $(if $(UPGRADE),--upgrade,)
	$(MAKE) lab-lock

## requirements-lab.lock: the lab extra (JupyterLab) and what it needs, with hashes, every package requirements.lock
## also pins kept at that pin (its pins are the constraints), so `make lab` installs only locked versions
lab-lock:
	$(BIN)/python -m pip install -q "uv==$$($(BIN)/python tools/lock.py --uv-version)"
	mkdir -p build/lab-lock
	if [ -f requirements-lab.lock ]; then cp requirements-lab.lock build/lab-lock/compiled.txt; fi  # today's pins stay
	sed -n 's/^\([A-Za-z0-9][^ ]*==[^ ]*\( ;[^\\]*\)\?\) *\\\?$$/\1/p' requirements.lock > build/lab-lock/pins.txt
	$(BIN)/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["lab"]))' > build/lab-lock/lab.in
	$(BIN)/python -m uv pip compile build/lab-lock/lab.in -c build/lab-lock/pins.txt --universal --python-version $(MIN_PYTHON) --generate-hashes --no-header --no-annotate -o build/lab-lock/compiled.txt
	{ echo "# The lab extra (JupyterLab) and its needs, for make lab; requirements.lock's pins are its constraints."; echo "# Generated by make lab-lock (make lock runs it); do not edit by hand."; cat build/lab-lock/compiled.txt; } > requirements-lab.lock

## the lowest versions pyproject.toml allows, in a venv of their own (uv's lowest-direct resolution; torch from
## TORCH_INDEX): nbval over every lesson, then the course run and the site from it (weekly in CI, not in make test)
LOWEST_VENV ?= .venv-lowest
LOWEST_TORCH ?= $$($(PYTHON) tools/lock.py --lowest-torch)
lowest:
	rm -rf $(LOWEST_VENV) build/lowest
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_VENV)/bin/python -m pip install -q "uv==$$($(PYTHON) tools/lock.py --uv-version)"
	$(LOWEST_VENV)/bin/python -m pip install -q $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),) "torch==$(LOWEST_TORCH)"
	$(LOWEST_VENV)/bin/python tools/lock.py --lowest build/lowest/requirements.txt
	$(LOWEST_VENV)/bin/python -m pip install -q -r build/lowest/requirements.txt
	$(LOWEST_VENV)/bin/python -m pip install -q --no-deps -e .
	$(call install_upstream,$(LOWEST_VENV))
	$(LOWEST_VENV)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "$(KERNEL_DISPLAY_NAME)" >/dev/null
	$(LOWEST_VENV)/bin/python -m pip list --format=freeze > build/lowest/installed.txt
	$(LOWEST_VENV)/bin/python -m pytest -n $(WORKERS) --dist loadfile --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks
	$(LOWEST_VENV)/bin/verlstudy run --device cpu --workers $(WORKERS) --out build/lowest/executed
	$(LOWEST_VENV)/bin/verlstudy site --from build/lowest/executed --out build/lowest/site

clean:
	rm -rf build site

## hub (issue 44): a real JupyterHub on localhost with two learners and an admin (tests/hub, marker `hub`). The hub's
## environment is build/hub/venv: JupyterHub and its plugins (requirements-hub.txt) layered over $(VENV), so the
## project venv is not changed; it is made from HUB_PYTHON, which the learners' accounts must be able to run (a
## Python under /root is not: HUB_PYTHON=/usr/bin/python3.11). configurable-http-proxy: npm, into build/hub/node.
## The test creates system users (vst-alice, vst-bob, vst-teach) and removes them: it runs as root (sudo if needed).
HUB_PYTHON ?= $(PYTHON)
HUB_VENV := build/hub/venv
HUB_SUDO := $(if $(filter 0,$(shell id -u)),,sudo -E)
.PHONY: hub-env hub-test
hub-env: setup
	@test -x $(HUB_VENV)/bin/python || $(HUB_PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -c 'import pathlib, site, sys; d = str(next(pathlib.Path(sys.argv[1]).resolve().glob("lib/python3.*/site-packages"))); (pathlib.Path(site.getsitepackages()[0]) / "zz_verlstudy_venv.pth").write_text("import site; site.addsitedir(" + repr(d) + ")" + chr(10))' $(VENV)
	$(HUB_VENV)/bin/python -m pip install -q -r requirements-hub.txt
	@test -x build/hub/node/node_modules/.bin/configurable-http-proxy || (mkdir -p build/hub/node && cd build/hub/node && npm install --no-audit --no-fund --silent configurable-http-proxy@5.3.0)

hub-test: hub-env
	$(HUB_SUDO) env VERLSTUDY_HUB_TEST=1 VERLSTUDY_HUB_PROXY=$(CURDIR)/build/hub/node/node_modules/.bin/configurable-http-proxy $(HUB_VENV)/bin/python -m pytest -p no:cacheprovider -v tests/hub
