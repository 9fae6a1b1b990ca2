# ggufq — convenience wrapper around CMake.
#
#   make            build (Release) into build/
#   make run        install missing dependencies, build, run the main job on the bundled sample
#   make test       install missing dependencies, build, fetch the ggml peer, run every test
#   make install    cmake --install build (PREFIX=/usr/local)
#   make clean      remove build/

BUILD    ?= build
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
SAMPLE   := tests/data/llama-2-tiny-random.gguf

.PHONY: all build deps configure run test install clean peer

all: build

deps:
	@sh scripts/install-deps

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: deps
	@$(MAKE) --no-print-directory build
	./$(BUILD)/ggufq info $(SAMPLE)

peer:
	@sh tools/fetch-peer $(BUILD)/peer

test: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory peer
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
