# ggufq — convenience wrapper around CMake.
#
#   make            build (Release) into build/
#   make run        install missing dependencies, build, write the sample model (a 2-block llama of
#                   width 256 with the fixture's vocabulary, F16) and requantize it to Q4_K_M
#   make test       install missing dependencies, build, fetch the ggml peer, run every test
#   make test-python  the Python package (python/): a venv in build/pyvenv, pip install offline, pytest
#   make bench      build, fetch the ggml peer, run `ggufq bench` (BENCH_ARGS="--quantize" ...);
#                   the google/benchmark suite is build/bench/ggufq-bench (--benchmark_filter=...)
#   make test-neon  cross-build for aarch64 and run the suite under qemu-aarch64
#   make test-x86-fallbacks  run the suite under qemu-x86_64 -cpu Haswell (AVX2) and Nehalem (scalar)
#   make test-asan  build with AddressSanitizer + UBSan and run the suite
#   make test-debug build with gcc at -O0 (Debug) into build-debug/ and run the suite
#   make test-clang build with clang (Release) into build-clang/ and run the suite
#   make test-matrix  make test, test-debug and test-clang, one after the other
#   make test-tsan  build with ThreadSanitizer and run the threaded tests
#   make fuzz SECONDS=N  build the libFuzzer targets (clang) into build-fuzz/, run each for N seconds
#                   (FUZZ_FLAGS=-fno-sanitize=... to look past a known bug)
#   make install    cmake --install build --prefix PREFIX (default /usr/local; DESTDIR= is honoured):
#                   the program, header, static and shared library, ggufq.pc, the CMake package,
#                   LICENSE and THIRD-PARTY.md (share/doc/ggufq); the list goes to build/install_manifest.txt
#   make uninstall  remove every file build/install_manifest.txt lists (what the last make install put
#                   there; give the same DESTDIR= if install had one), then the package's own
#                   directories if empty
#   make clean      remove build/

BUILD    ?= build
PREFIX   ?= /usr/local
MANIFEST ?= $(BUILD)/install_manifest.txt
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
TEMPLATE := tests/data/llama-2-tiny-random.gguf
SAMPLE   := $(BUILD)/sample-f16.gguf
SAMPLE_TARGET ?= Q4_K_M
BENCH_ARGS ?=
SECONDS  ?= 60
FUZZ_TARGETS := fuzz_gguf fuzz_dequant fuzz_convert fuzz_requant_opts
FUZZ_FLAGS ?=

.PHONY: all build deps configure run test test-python bench bench-requant install uninstall clean peer test-neon mca-report test-x86-fallbacks test-asan test-tsan fuzz \
	test-debug test-clang test-matrix

all: build

deps:
	@sh scripts/install-deps

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The fixture's rows of 8 fit no quantized block (every tensor would be
# copied), so the sample is generated from it: same vocabulary, width 256.
run: deps
	@$(MAKE) --no-print-directory build
	./$(BUILD)/tools/make-sample $(TEMPLATE) $(SAMPLE)
	./$(BUILD)/ggufq requant $(SAMPLE) $(SAMPLE_TARGET) $(BUILD)/sample-$(SAMPLE_TARGET).gguf
	@echo
	@echo "Every matrix of the sample was quantized by llama.cpp's $(SAMPLE_TARGET) rules (norms stay F32):"
	./$(BUILD)/ggufq info $(BUILD)/sample-$(SAMPLE_TARGET).gguf | sed -n '/^tensors/,$$p'

peer:
	@sh tools/fetch-peer $(BUILD)/peer

test: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory peer
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	@$(MAKE) --no-print-directory test-python

# The whole suite under other compilers and optimisation levels, against the
# peer: gcc -O0 and clang -O2 take other paths through what C leaves open
# (intrinsic immediates must be constants, not values that fold under -O2;
# which of two NaN operands comes out must not follow the compiler's
# operand order), so the same bytes must come out of every build.
PEER_DIR = $(CURDIR)/$(BUILD)/peer/package/bins/linux-x64
test-debug: deps peer
	CC=gcc CXX=g++ cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DGGUFQ_BUILD_BENCH=OFF
	cmake --build build-debug -j $(JOBS)
	cd build-debug && GGUFQ_PEER_DIR=$(PEER_DIR) ctest --output-on-failure -j $(JOBS) --timeout 1800

test-clang: deps peer
	@sh scripts/install-deps --clang
	CC=clang CXX=clang++ cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DGGUFQ_BUILD_BENCH=OFF
	cmake --build build-clang -j $(JOBS)
	cd build-clang && GGUFQ_PEER_DIR=$(PEER_DIR) ctest --output-on-failure -j $(JOBS) --timeout 900

# The Python package, installed as python/README.md says: a venv over Debian's
# numpy and pytest (--system-site-packages), pip offline, the C sources compiled in.
# pytest runs in python/tests so that python/ggufq (no extension inside) is not imported.
PYTHON ?= /usr/bin/python3
PYVENV  = $(BUILD)/pyvenv
test-python: deps build peer
	test -x $(PYVENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(PYVENV)
	rm -rf python/build   # objects of sources since moved or removed must not be linked again
	$(PYVENV)/bin/pip install -q --no-build-isolation --no-index --force-reinstall --no-deps ./python
	cd python/tests && GGUFQ_PEER_DIR=$(PEER_DIR) GGUFQ_CLI=$(CURDIR)/$(BUILD)/ggufq \
	  $(CURDIR)/$(PYVENV)/bin/python -m pytest -q -p no:cacheprovider .

test-matrix:
	@$(MAKE) --no-print-directory test
	@$(MAKE) --no-print-directory test-debug
	@$(MAKE) --no-print-directory test-clang

# AArch64: cross-compiled, every test run under qemu-aarch64 (no peer there: it is x86-64 only).
test-neon:
	@sh scripts/install-deps --neon
	cmake -S . -B build-neon -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
	  -DCMAKE_BUILD_TYPE=Release -DGGUFQ_BUILD_BENCH=OFF
	cmake --build build-neon -j $(JOBS)
	@echo "== aarch64 test suite under qemu-aarch64 =="
	@file build-neon/ggufq | sed 's/,.*//; s/^/binary: /' || true
	qemu-aarch64 build-neon/ggufq cpu
	cd build-neon && ctest --output-on-failure -j $(JOBS) --timeout 900

# The dequantizers' hot loops through llvm-mca (NEON on Neoverse, AVX2/AVX-512 on Zen 4):
# the ARM path cannot be timed here, so it is analysed.
mca-report:
	@sh scripts/install-deps --mca
	python3 tools/mca-report

# Lower x86 paths on an AVX-512 machine: the built suite under emulated
# Haswell (dispatch must pick avx2) and Nehalem (scalar) CPUs.
test-x86-fallbacks: build
	@sh scripts/install-deps --qemu
	sh scripts/test-x86-fallbacks $(BUILD)

# AddressSanitizer + UndefinedBehaviorSanitizer (leak detection on), every ISA.
# Optimised (-O2 -g) like the library people run (test-debug covers -O0).
test-asan: deps peer
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGGUFQ_BUILD_BENCH=OFF \
	  -DGGUFQ_SANITIZE=address,undefined,float-cast-overflow
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  GGUFQ_PEER_DIR=$(CURDIR)/$(BUILD)/peer/package/bins/linux-x64 \
	  ctest --output-on-failure -j $(JOBS) --timeout 1800

# ThreadSanitizer on the multi-threaded tests (not part of `make test` or CI:
# it is run by hand and reported). The library's threads are plain pthreads
# (src/api/threads.c), which TSan understands with any compiler.
TSAN_TESTS   := test_threads test_requant test_parallel test_pool
test-tsan: peer
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DGGUFQ_BUILD_BENCH=OFF -DGGUFQ_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target ggufq $(TSAN_TESTS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  GGUFQ_PEER_DIR=$(CURDIR)/$(BUILD)/peer/package/bins/linux-x64 \
	  ctest --output-on-failure -j $(JOBS) --timeout 1800 \
	  -R '^($(subst $(eval) ,|,$(strip $(TSAN_TESTS)))|cli_requant|cli_failures|cli_threads)$$'

# libFuzzer targets (tests/fuzz): each runs SECONDS seconds on a copy of its corpus
# (new inputs stay in build-fuzz/corpus/<target>, crashes go to build-fuzz/artifacts/<target>/).
fuzz:
	@sh scripts/install-deps --fuzz
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DGGUFQ_BUILD_BENCH=OFF -DGGUFQ_BUILD_CLI=OFF -DGGUFQ_FUZZ=ON "-DGGUFQ_FUZZ_FLAGS=$(FUZZ_FLAGS)"
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@fail=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t build-fuzz/artifacts/$$t; \
	  cp -n tests/fuzz/corpus/$$t/* build-fuzz/corpus/$$t/; \
	  case $$t in fuzz_dequant) extra="-max_len=4096";; \
	    fuzz_requant_opts) extra="-max_len=32768 -dict=tests/fuzz/gguf.dict";; \
	    *) extra="-max_len=16384 -dict=tests/fuzz/gguf.dict";; esac; \
	  echo "== $$t: $(SECONDS) s =="; \
	  build-fuzz/tests/fuzz/$$t -max_total_time=$(SECONDS) -timeout=30 -print_final_stats=1 $$extra \
	    -artifact_prefix=build-fuzz/artifacts/$$t/ build-fuzz/corpus/$$t > build-fuzz/$$t.log 2>&1 || fail=1; \
	  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|ERROR|SUMMARY|Test unit written' \
	    build-fuzz/$$t.log; \
	done; \
	if [ $$fail -ne 0 ]; then echo "fuzz: crash found (logs: build-fuzz/fuzz_*.log)"; exit 1; fi

bench: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory peer
	./$(BUILD)/ggufq bench $(BENCH_ARGS)
	@echo "More: ./$(BUILD)/ggufq bench --help; google/benchmark suite: ./$(BUILD)/bench/ggufq-bench"

bench-requant: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory peer
	./$(BUILD)/ggufq bench --requant $(BENCH_ARGS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Only the files install recorded (absolute paths under the prefix, without
# DESTDIR, which is prepended here as install did); no build needed.
uninstall:
	@if [ ! -f "$(MANIFEST)" ]; then echo "nothing to uninstall: no $(MANIFEST) (run make install first)"; exit 1; fi
	@while IFS= read -r f || [ -n "$$f" ]; do \
	  [ -n "$$f" ] || continue; f="$(DESTDIR)$$f"; \
	  if [ -e "$$f" ] || [ -L "$$f" ]; then echo "-- Removing: $$f"; rm -f -- "$$f" || exit 1; fi; \
	done < "$(MANIFEST)"
	@sed -n 's|/ggufqConfig\.cmake$$||p; s|/LICENSE$$||p; s|/pkgconfig/ggufq\.pc$$|/pkgconfig|p' "$(MANIFEST)" | \
	  while IFS= read -r d || [ -n "$$d" ]; do rmdir -- "$(DESTDIR)$$d" 2>/dev/null || true; done

clean:
	rm -rf $(BUILD) build-neon build-asan build-tsan build-fuzz build-debug build-clang
	rm -rf python/build python/ggufq.egg-info
