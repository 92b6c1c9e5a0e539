# tcprepro: the commands a user types. Each target installs what it needs first (idempotent).
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
SNAKE := $(VENV)/bin/snakemake
STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml 2>/dev/null | sha256sum | cut -c1-12)
CORES ?= all

.PHONY: deps test-deps test-all quick reproduce restore smoke test unit lint doctor clean-stale vm-stop html-report image help \
	uml-kernel crossval bench bench-lanes robustness
PROFILE ?= quick
help:
	@echo "make quick      regenerate every table and figure with shortened trials"
	@echo "make reproduce  every paper's whole matrix at the papers' full durations, timed"
	@echo "make restore    unpack the committed full-run trials (data/) into results/full/"
	@echo "make robustness every claim judged again under each alternative of the papers' open choices"
	@echo "                (full profile; ROBUSTNESS='<choice>.<alternative>,...' narrows it; docs/robustness.md)"
	@echo "make smoke      one cell per paper, a few minutes"
	@echo "make test       the test suite (what CI runs)"
	@echo "make test-all   the test suite and the QEMU TCG lane's tests (about 10 minutes more)"
	@echo "make unit       the unit tests and lint (ruff, mypy) only, under a minute"
	@echo "make doctor     what this kernel can run, and the fix for what it cannot"
	@echo "make html-report PROFILE=quick   figures/report-<profile>.html: the report for a browser"
	@echo "make image      the docker image (tag tcprepro), with the engine and base image it needs"
	@echo "make uml-kernel the virtual-time lane's kernel (built once, about 5 minutes)"
	@echo "make crossval   the virtual-time lane against the QEMU TCG lane, figures/crossval/"
	@echo "make bench      host CPU per data packet and per virtual second (UML), wall per 802.11b run;"
	@echo "                BENCH_AGAINST=<commit> measures that commit too, side by side"
	@echo "make bench-lanes  wall time per trial on the UML and QEMU lanes, side by side"

deps: $(STAMP)
	@scripts/install-system
	@scripts/guest-user

# The venv sees Debian's python3 site-packages: that is where Mininet lives.
$(STAMP): requirements.lock pyproject.toml
	@scripts/install-system
	@test -x $(PY) || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	@# the project itself, editable: its packages import from the checkout, `tcprepro` is on the venv's PATH
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@rm -f $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/tcprepro-checkout.pth
	@rm -f $(VENV)/.installed-* && touch $@

quick: deps
	$(SNAKE) --cores $(CORES) --workflow-profile profiles/quick
# Every paper's whole matrix, as committed in figures/<paper>/full/. The committed raw trials of the
# full runs (data/README.md): `make restore reproduce` regenerates the figures from them and runs
# only what they lack.
reproduce: deps
	@start=$$(date +%s); papers=$$($(PY) -c 'from configuration.load import paper_names; print(",".join(paper_names()))'); \
	$(SNAKE) --cores $(CORES) --workflow-profile profiles/full --config profile=full "papers=[$$papers]" || exit $$?; \
	echo "make reproduce: $$(( ($$(date +%s) - start) / 60 )) min $$(( ($$(date +%s) - start) % 60 )) s"
# The open choices' alternatives (config/<paper>.yaml reference.choices): their cells measured in
# the full profile, every claim judged under each (figures/<paper>/full-robustness.json).
ROBUSTNESS ?= *
robustness: deps
	$(SNAKE) --cores $(CORES) --workflow-profile profiles/full --config profile=full "robustness=$(ROBUSTNESS)"
restore: deps
	$(PY) -m tcprepro archive restore --profile full --jobs $(CORES)
	@# the reference cells' second sample, where one is archived (docs/robustness.md)
	@if [ -d data/second-sample ]; then $(PY) -m tcprepro archive restore --second-sample --profile full --jobs $(CORES); fi
smoke: deps
	$(SNAKE) --cores $(CORES) --workflow-profile profiles/smoke

# make test leaves out the QEMU TCG lane's tests (marker vm): no paper measures on that lane, only
# `make crossval` uses it, and its guests cost about 10 of the suite's minutes. make test-all runs them too.
# Both start the UML kernel's build beside lint and the unit tests (scripts/uml-kernel-early).
test: deps test-deps
	@scripts/uml-kernel-early $(PY)
	@$(MAKE) --no-print-directory lint
	$(PY) -m pytest -ra --durations=40 -m "not vm" tests/unit tests/integration
test-all: deps test-deps
	@scripts/uml-kernel-early $(PY)
	@$(MAKE) --no-print-directory lint
	$(PY) -m pytest -ra --durations=40 tests/unit tests/integration
# What only the tests need (config/test-packages.txt: a one-node SLURM for the cluster test).
test-deps:
	@scripts/install-system config/test-packages.txt
unit: deps lint
	$(PY) -m pytest -q tests/unit

# snakemake --lint: scripts/snakemake_lint.py fails on a lint it does not explain.
lint: deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy --show-traceback
	$(PY) scripts/snakemake_lint.py

doctor: deps
	$(PY) -m tcprepro doctor

clean-stale: deps
	$(PY) -m tcprepro cleanup

# The workflow builds it after each run; this rebuilds it from figures/<paper>/<profile>/ as they are
# (PROFILE=full: the committed reference), naming the papers that have none.
html-report: deps
	$(PY) -m analysis.report.html_report --profile $(PROFILE)

image:
	scripts/docker-image tcprepro

vm-stop: deps
	$(PY) -m tcprepro vm stop

uml-kernel: deps
	$(PY) -m testbed.uml_kernel build

# The UML side of the cross-validation (the TCG side is the committed references' snapshot in
# data/crossval/tcg/): the same cells on the virtual-time lane, as the workflow runs them (iperf2)
# and with the references' own procedure (timed flows by iperf3); snapshots, the figure and table.
# LEDBAT's linear cells are not run again: the TCG reference ran them with delayed ACKs, the config
# now without (config/ledbat.yaml, reference.choices); their UML snapshot, from when both lanes ran
# them alike, is kept (--merge: the new cells go into the committed snapshot).
# H-TCP as the references ran it (Linux's default adaptive backoff), so only the lane differs.
# On kernel 1a42f5960891 Westwood+'s Test 2 cells with iperf3 stall the guest's virtual time before
# their senders start (docs/measurements.md), so the iperf3 Westwood+ line stops there, loudly.
UML := TCPREPRO_KERNEL=uml TCPREPRO_MODULE_PARAMS=htcp.use_adaptive_backoff=1 $(SNAKE) --cores $(CORES) \
  --config profile=full
crossval: deps
	$(UML) 'papers=[collateral]' results=results/crossval figures=results/crossval/f 'cells=newreno-rtt50-*,htcp-rtt50-*,cubic-rtt50-*'
	$(UML) 'papers=[westwood]' results=results/crossval figures=results/crossval/f \
	  'cells=cubic-t1,cubic-t2,cubic-t3,westwood-t1,westwood-t2,westwood-t3'
	$(UML) 'papers=[ledbat]' results=results/crossval figures=results/crossval/f \
	  'cells=ledbat-md*-rtt40-n2-30mb,ledbat-md*-rtt40-n2-50mb,ledbat-md*-rtt40-n2-100mb'
	TCPREPRO_BULK_GENERATOR=iperf3 $(UML) 'papers=[collateral]' results=results/crossval-iperf3 \
	  figures=results/crossval-iperf3/f 'cells=newreno-rtt50-*,htcp-rtt50-*,cubic-rtt50-*'
	TCPREPRO_BULK_GENERATOR=iperf3 $(UML) 'papers=[westwood]' results=results/crossval-iperf3 \
	  figures=results/crossval-iperf3/f 'cells=cubic-t1,cubic-t2,cubic-t3,westwood-t1,westwood-t2,westwood-t3'
	for p in collateral westwood; do \
	  $(PY) -m analysis.crossval snapshot --lane uml --paper $$p --results results/crossval/full/$$p || exit 1; done
	$(PY) -m analysis.crossval snapshot --lane uml --paper ledbat --results results/crossval/full/ledbat --merge
	for p in collateral westwood; do $(PY) -m analysis.crossval snapshot --lane uml-iperf3 --paper $$p \
	  --results results/crossval-iperf3/full/$$p || exit 1; done
	$(PY) -m analysis.crossval draw

bench: deps
	$(PY) -m benchmarks.per_packet $(if $(BENCH_AGAINST),--against $(BENCH_AGAINST))

bench-lanes: deps
	$(PY) -m benchmarks.lanes --matrix
