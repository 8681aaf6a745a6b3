# braid — a thin wrapper over CMake. The two commands a newcomer needs:
#
#   make demo   install what is missing, build, run the MLP demo
#   make test   install what is missing, build, run the whole test suite
#
# Other targets: build, test-sanitize (ASan + UBSan), fuzz (libFuzzer on the
# parser and the plan-file reader, clang), install (PREFIX=/usr/local), clean.
#
# Variables: BUILD (build folder), BRAID_CUDA (AUTO|ON|OFF), BRAID_WERROR
# (ON in CI), JOBS, FUZZ_SECONDS.

BUILD        ?= build
BUILD_SAN    ?= build-sanitize
BUILD_FUZZ   ?= build-fuzz
BRAID_CUDA   ?= AUTO
BRAID_WERROR ?= OFF
PREFIX       ?= /usr/local
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60

CMAKE_FLAGS = -DBRAID_CUDA=$(BRAID_CUDA) -DBRAID_WERROR=$(BRAID_WERROR) \
              -DCMAKE_INSTALL_PREFIX=$(PREFIX)

.PHONY: all demo test test-sanitize build deps fuzz install clean

all: build

# Debian packages braid needs to build and test (CUDA comes from the toolkit).
deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/examples/mlp

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-sanitize: deps
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DBRAID_SANITIZE=ON \
	      $(CMAKE_FLAGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir $(BUILD_SAN) --output-on-failure -j $(JOBS)

# libFuzzer over the text parser, the plan-file reader and the ONNX
# importer, FUZZ_SECONDS in all (a third each), seeded with the examples (as
# text, and compiled into plan files by fuzz_planfile -write_seeds) and the
# tiny ONNX models.
FUZZ_HALF = $(shell s=$$(( $(FUZZ_SECONDS) / 3 )); [ $$s -ge 1 ] || s=1; echo $$s)
fuzz: deps
	@command -v clang >/dev/null || { echo "make fuzz: clang is not installed (apt-get install clang)"; exit 1; }
	CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	      -DBRAID_FUZZ=ON -DBRAID_TESTS=OFF -DBRAID_CUDA=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_parse fuzz_planfile fuzz_onnx
	mkdir -p $(BUILD_FUZZ)/corpus $(BUILD_FUZZ)/corpus_plans $(BUILD_FUZZ)/corpus_onnx
	cp examples/graphs/*.graph $(BUILD_FUZZ)/corpus/
	$(BUILD_FUZZ)/fuzz_parse -max_total_time=$(FUZZ_HALF) -max_len=4096 \
	      -dict=fuzz/parse.dict \
	      -timeout=10 $(BUILD_FUZZ)/corpus
	ASAN_OPTIONS=detect_leaks=0 $(BUILD_FUZZ)/fuzz_planfile \
	      -write_seeds=$(BUILD_FUZZ)/corpus_plans -graphs=examples/graphs
	$(BUILD_FUZZ)/fuzz_planfile -max_total_time=$(FUZZ_HALF) \
	      -max_len=262144 -timeout=10 -rss_limit_mb=2048 \
	      $(BUILD_FUZZ)/corpus_plans
	cp tests/models/tiny/*.onnx tests/models/tiny/*/test_data_set_0/*.pb \
	      $(BUILD_FUZZ)/corpus_onnx/ 2>/dev/null || true
	$(BUILD_FUZZ)/fuzz_onnx -max_total_time=$(FUZZ_HALF) -max_len=1048576 \
	      -timeout=10 -rss_limit_mb=2048 $(BUILD_FUZZ)/corpus_onnx

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ)
