# fdwindow: measure this machine, test, check the macOS code, bench.
# See README.md.

CARGO ?= cargo
UNAME := $(shell uname -s)
RESULTS ?= results
MACOS_TARGETS := aarch64-apple-darwin x86_64-apple-darwin
# Debian's rustc-web toolchain, used only to type-check for macOS (it ships
# rust-src, which -Zbuild-std needs; rustup cannot fetch targets here).
WEB_PACKAGES := rustc-web cargo-web rust-web-src rust-web-clippy
# MACOS_TARGET_DIR may point outside the tree, so several checkouts share one
# build of std for the macOS targets.
MACOS_TARGET_DIR ?= target/macos-check
WEB_ENV := PATH=/usr/bin:$$PATH RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
	CARGO_TARGET_DIR=$(MACOS_TARGET_DIR) RUSTUP_TOOLCHAIN=

.PHONY: timing probe-linux probe-macos probe matrix pressure test check-macos build-macos web-toolchain bench bench-quick lint clean \
	probe-kernels kernel-deb test-vm vm-tools

probe-linux:
	@[ "$(UNAME)" = Linux ] || { echo "probe-linux measures Linux; this is $(UNAME): run 'make probe-macos' on a Mac" >&2; exit 2; }
	@$(MAKE) --no-print-directory probe PROBE_GOAL=$@

probe-macos:
	@[ "$(UNAME)" = Darwin ] || { echo "probe-macos measures macOS and must run on a Mac (this is $(UNAME)); here run 'make probe-linux', and 'make check-macos' to type-check the macOS code" >&2; exit 2; }
	@$(MAKE) --no-print-directory probe PROBE_GOAL=$@

# A probe run writes into results/local/ (git-ignored: this machine's own
# results and their MATRIX.md), so measuring a new machine leaves the tree as
# it was; RESULTS=DIR writes there instead (RESULTS=results adds this machine
# to the committed matrix and the README).
PROBE_RESULTS = $(if $(filter command line environment,$(origin RESULTS)),$(RESULTS),results/local)

probe:
	$(CARGO) build --release --locked --bins
	./target/release/fdwindow run --results $(PROBE_RESULTS)
	./target/release/fdwindow matrix --results $(PROBE_RESULTS)
	@if [ "$(PROBE_RESULTS)" = results/local ]; then \
		echo "This machine's results are in results/local/ (git-ignored); the committed results are unchanged."; \
		echo "To add this machine to the committed matrix: make $(or $(PROBE_GOAL),probe) RESULTS=results"; \
	elif [ "$$(realpath -m '$(PROBE_RESULTS)')" = "$$(realpath -m results)" ] \
		&& git rev-parse --is-inside-work-tree >/dev/null 2>&1 \
		&& [ -n "$$(git status --porcelain -- results)" ]; then \
		echo "Changed in the committed results (README.md's generated sections follow them):"; \
		git status --short -- results; \
		echo "Keep them: commit them with README.md. Drop them: git checkout -- results && git clean -f -- results && make matrix"; \
	fi

# Regenerates MATRIX.md, the chart and README.md's generated sections.
matrix:
	$(CARGO) run --release --locked --bin fdwindow -- matrix --results $(RESULTS)

# The fork-pressure measurements behind README.md's pressure tables:
# $(RESULTS)/pressure-<platform>.json, then the README's sections.
PRESSURE_RUNS ?= 100
# Where a default run spends its time: results/timing-<platform>.json and the
# README's timing section.
timing:
	$(CARGO) build --release --locked --bins --examples
	./target/release/examples/run_timing --runs 5 --idle 0.5 --results $(RESULTS)
	./target/release/fdwindow matrix --results $(RESULTS)

pressure:
	$(CARGO) build --release --locked --workspace --lib --bins --examples
	./target/release/examples/pressure_tables --runs $(PRESSURE_RUNS) --results $(RESULTS)
	./target/release/fdwindow matrix --results $(RESULTS)

# The VM tests are #[ignore]d here and listed as SKIP: `make test-vm` runs them.
test:
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --locked --workspace --no-fail-fast --status-level skip && $(CARGO) test --locked --workspace --doc; \
	else \
		$(CARGO) test --locked --workspace --no-fail-fast && $(CARGO) test --locked --workspace --doc; \
	fi

# Other kernels, each booted under QEMU with the probes (fdwindow vm). The
# kernel packages are cached outside the tree, never committed.
KERNEL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fdwindow/kernels
# The default set: Debian 12's newest 6.1 cloud kernel (apt-cache names it).
KERNEL_PACKAGES ?= $(shell apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$$' 2>/dev/null | cut -d' ' -f1 | sort -V | tail -n 1)
# KERNELS: files to boot instead (images or linux-image-*.deb).
KERNELS ?=
VM_ACCEL ?= auto

# qemu-system-x86, busybox-static and cpio from the distribution, when missing.
vm-tools:
	@missing=""; for p in qemu-system-x86 busybox-static cpio; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q $$missing; \
	fi

# Downloads the default kernel packages into $(KERNEL_CACHE) (apt-get download:
# no install), once.
kernel-deb:
	@[ -n "$(KERNEL_PACKAGES)" ] || { echo "apt-cache knows no linux-image-6.1.0-*-cloud-amd64-unsigned: run 'apt-get update' on Debian 12, or pass KERNELS=FILE..." >&2; exit 2; }
	@mkdir -p "$(KERNEL_CACHE)"
	@cd "$(KERNEL_CACHE)" && for p in $(KERNEL_PACKAGES); do \
		ls $${p}_*.deb >/dev/null 2>&1 || apt-get download -q $$p || exit 1; \
	done

probe-kernels: vm-tools $(if $(KERNELS),,kernel-deb)
	$(CARGO) build --release --locked --bins
	@kernels="$(KERNELS)"; \
	if [ -z "$$kernels" ]; then for p in $(KERNEL_PACKAGES); do \
		kernels="$$kernels $$(ls "$(KERNEL_CACHE)"/$${p}_*.deb | sort -V | tail -n 1)"; \
	done; fi; \
	echo "./target/release/fdwindow vm --accel $(VM_ACCEL) --results $(RESULTS) --kernel$$kernels"; \
	./target/release/fdwindow vm --accel $(VM_ACCEL) --results $(RESULTS) --kernel $$kernels

# The VM tests (tests/vm.rs, #[ignore]d so that `make test` lists them as
# skipped): a short probe set, a broken initramfs, a timeout, signals.
test-vm: vm-tools kernel-deb
	$(CARGO) build --release --locked --bins
	FDWINDOW_VM_BIN=$(CURDIR)/target/release/fdwindow \
	FDWINDOW_TEST_KERNEL="$$(ls "$(KERNEL_CACHE)"/$(firstword $(KERNEL_PACKAGES))_*.deb | sort -V | tail -n 1)" \
		$(CARGO) test --locked --test vm -- --ignored --test-threads 2

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

# Debian's rustc-web toolchain, installed when missing.
web-toolchain:
	@missing=""; for p in $(WEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q $$missing; \
	fi

check-macos: web-toolchain
	@for t in $(MACOS_TARGETS); do \
		echo "== check and clippy for $$t"; \
		$(WEB_ENV) /usr/bin/cargo clippy --locked -Zbuild-std=std,panic_abort --target $$t --workspace --all-targets -- -D warnings || exit 1; \
	done

# Mach-O builds for both Apple targets, linked here: zig (PyPI's ziglang)
# ships macOS's headers and libSystem's stubs, so `zig cc` compiles the shims
# and links the Rust binary (through cargo-zigbuild) without an SDK. Leaves
# $(MACOS_OUT)/TARGET/ holding fdwindow and each shim as a dylib, checked by
# .ci/macos_artifacts.py (Mach-O of the arch, libSystem alone, every
# interposed call in __interpose, arm64 signed). dead_strip_dylibs drops
# libiconv, which the libc crate names for Apple targets and nothing here
# calls. rustc warns that xcrun is missing: zig links against its own
# libSystem stubs and needs no SDK.
ZIG_PACKAGES := ziglang==0.17.1 cargo-zigbuild==0.24.1
MACOS_OUT ?= target/macos
# The Python that pip installs ziglang into (WEB_ENV puts /usr/bin first).
ZIG_PYTHON := $(shell python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
build-macos: web-toolchain
	@python3 -m ziglang version >/dev/null 2>&1 && command -v cargo-zigbuild >/dev/null 2>&1 \
		|| { echo "installing $(ZIG_PACKAGES)"; python3 -m pip install --quiet $(ZIG_PACKAGES); }
	@for t in $(MACOS_TARGETS); do \
		echo "== build for $$t"; \
		mkdir -p $(MACOS_TARGET_DIR); \
		$(WEB_ENV) CARGO_ZIGBUILD_PYTHON_PATH=$(ZIG_PYTHON) \
			env "CARGO_TARGET_$$(echo $$t | tr a-z- A-Z_)_RUSTFLAGS=-C link-arg=-Wl,-dead_strip_dylibs" \
			cargo-zigbuild build --locked --release -Zbuild-std=std,panic_abort --target $$t --bin fdwindow \
			--message-format=json-render-diagnostics > $(MACOS_TARGET_DIR)/build-$$t.json || exit 1; \
		python3 .ci/macos_artifacts.py $$t $(MACOS_OUT) < $(MACOS_TARGET_DIR)/build-$$t.json || exit 1; \
	done

# Both write $(RESULTS)/costs-<platform>.json (the interleaved samples and the
# intervals behind MATRIX.md's cost columns; criterion's own JSON stays
# private) and regenerate the matrix.
bench:
	FDWINDOW_RESULTS=$(RESULTS) $(CARGO) bench --locked --bench bench_main
	$(CARGO) run --release --locked --bin fdwindow -- matrix --results $(RESULTS)

# Criterion's --quick with the short times each group sets, and fewer rounds.
bench-quick:
	FDWINDOW_RESULTS=$(RESULTS) $(CARGO) bench --locked --bench bench_main -- --quick
	$(CARGO) run --release --locked --bin fdwindow -- matrix --results $(RESULTS)

# The labelled flake benchmark of `fdwindow audit` (benches/flakes/README.md):
# its own cargo package, never built by `make test` or .ci/run, whose flakes it
# would turn red. Per test binary, reruns, stress-ng (Shaker's four settings),
# `fdwindow stress` and `fdwindow audit` under one budget each; writes
# $(RESULTS)/audit-bench-<platform>.json. FDWINDOW names the fdwindow binary
# (the default one is built first); BENCH_AUDIT_ARGS passes run.py options
# (--budget SECONDS, --arms reruns,shaker,stress,audit, --no-10x, --only NAME).
# Then the workspace benchmark (benches/workspace/README.md): a two-crate,
# nine-binary, 1,279-test workspace audited whole, under cargo test and under
# cargo nextest; writes $(RESULTS)/audits/workspace-bench-<platform>.json.
# BENCH_WORKSPACE_ARGS passes its options (--modes cargo-test, --repeats N).
FDWINDOW ?= ./target/release/fdwindow
FLAKES_TARGET_DIR ?= $(CURDIR)/target/flakes
WORKSPACE_TARGET_DIR ?= $(CURDIR)/target/workspace
BENCH_AUDIT_ARGS ?=
BENCH_WORKSPACE_ARGS ?=
.PHONY: bench-audit bench-workspace
bench-audit:
	@if [ "$(FDWINDOW)" = ./target/release/fdwindow ]; then $(CARGO) build --release --locked --bin fdwindow; fi
	CARGO_TARGET_DIR=$(FLAKES_TARGET_DIR) python3 benches/flakes/run.py --cargo $(CARGO) \
		--fdwindow $(FDWINDOW) --results $(RESULTS) $(BENCH_AUDIT_ARGS)
	@$(MAKE) --no-print-directory bench-workspace

bench-workspace:
	@if [ "$(FDWINDOW)" = ./target/release/fdwindow ]; then $(CARGO) build --release --locked --bin fdwindow; fi
	CARGO_TARGET_DIR=$(WORKSPACE_TARGET_DIR) python3 benches/workspace/run.py --cargo $(CARGO) \
		--fdwindow $(FDWINDOW) --results $(RESULTS) $(BENCH_WORKSPACE_ARGS)

clean:
	$(CARGO) clean
	rm -rf target/macos-check target/macos
