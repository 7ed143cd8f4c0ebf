# The two commands for a fresh machine:
#   make demo   install what is missing, build, and run the energy case study (examples/energy/):
#               an agent finds the anomalies in a year of meter readings, scored against the ground truth;
#               MODEL=replay forces the scripted transcript, MODEL=NAME picks a model (default: a
#               configured model or a local Ollama server if there is one, else the transcript)
#   make test   install what is missing, build with ASan+UBSan, and run every test suite
# Also: make demo-sales (examples/sales/), make demo-agent (examples/analysis/: corral exec, then a replayed
# agent run), make (build), make bench (bench/run-all.sh; set NSJAIL=path to include nsjail, MODEL=id
# [BASE_URL=url] to also run the modes' tasks against a real model), make stress, make install, make clean.
# make compat: CPython's regression suite bare and in the jail, the full comparison of docs/compatibility.md
# (20-40 minutes per user; make test runs a quick set).

BUILD ?= build

.PHONY: all build deps demo demo-sales demo-agent test bench stress compat install clean fuzz

all: build

build:
	@scripts/install-deps.sh build
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) --buildtype=debugoptimized >/dev/null
	ninja -C $(BUILD)

MODEL ?=

demo:
	@scripts/install-deps.sh demo
	@$(MAKE) --no-print-directory build
	CORRAL=$(BUILD)/corral MODEL='$(MODEL)' examples/energy/run.sh

demo-sales:
	@scripts/install-deps.sh demo
	@$(MAKE) --no-print-directory build
	CORRAL=$(BUILD)/corral MODEL='$(MODEL)' examples/sales/run.sh

demo-agent:
	@scripts/install-deps.sh demo
	@$(MAKE) --no-print-directory build
	examples/analysis/run.sh $(BUILD)/corral

test:
	@scripts/install-deps.sh test
	scripts/run-tests.sh

bench:
	@scripts/install-deps.sh bench
	@$(MAKE) --no-print-directory build
	CORRAL=$(CURDIR)/$(BUILD)/corral MODEL="$(MODEL)" BASE_URL="$(BASE_URL)" bench/run-all.sh

stress:
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory build
	$(BUILD)/tests/jail-loop 20000
	CORRAL=$(CURDIR)/$(BUILD)/corral CORRAL_KILL_RACE_JAILS=3000 CORRAL_KILL_RACE_SESSION_JAILS=1000 \
		/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/attack/test_syscalls.py tests/attack/test_via_session.py \
		-k busy_host
	CORRAL_INIT=$(CURDIR)/$(BUILD)/corral-init CORRAL_ZYGOTE=$(CURDIR)/$(BUILD)/corral-zygote \
		tests/stress/exec-pool-attack.sh $(CURDIR)/$(BUILD)/corral

compat:
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory build
	tests/compat/run-full.sh $(BUILD) compat-out

install: build
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-tsan bench/out

# make fuzz: build the libFuzzer targets (tests/fuzz/) with clang in build-fuzz/
# and run each for FUZZ_SECONDS (default 60) from its committed corpus; new
# inputs and crashes stay in build-fuzz/.  FUZZ_TARGETS=fuzz-profile picks
# targets, FUZZ_MERGE=1 adds new coverage to the corpus.  See tests/fuzz/README.md.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

fuzz:
	@scripts/install-deps.sh build
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_TARGETS)
