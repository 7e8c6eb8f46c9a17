#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU checks the CUDA backend: configures an
# engine-only CUDA build (no Qt, no SQLite) for this GPU's architecture, builds it with
# every core, writes synthetic models, runs the GPU test suites and the GPU benchmarks,
# and ends with one summary. Meant to finish within 8 minutes on a 16-core machine.
#
#   bash tests/cuda/device_check.sh [--quick | --tests-only] [--model FILE.gguf]... [--baseline SRC.tar.xz]
#
# --quick: tests and the small benchmarks only (no 8B model); --tests-only: no
# benchmarks. --model: also test and benchmark these GGUF files (e.g. the default model,
# where it is on the machine). --baseline: an earlier source tree of Arbor as `git archive`
# writes it (xz-compressed), built beside this one; the two arbor-bench binaries then
# decode the 8B model in alternating runs, so that a change's before and after come from
# one run.
# Needs nvcc, cmake, a C++20 compiler and the development files of spdlog, fmt, ICU and simdjson;
# where the system lacks them, set ARBOR_DEPS_PREFIX to a prefix that has them (for
# example Debian 12's libspdlog-dev, libfmt-dev, libicu-dev, libsimdjson-dev and their libraries unpacked
# with dpkg -x). The summary is also written to $ARBOR_CHECK_OUT/summary.txt when set.
set -uo pipefail

readonly REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly BUILD="${ARBOR_CHECK_BUILD:-$REPO_ROOT/build-gpu}"
readonly MODELS="${ARBOR_CHECK_MODELS:-$BUILD/models}"
quick=0
tests_only=0
extra_models=()
baseline=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1 ;;
        --tests-only) tests_only=1 ;;
        --model) extra_models+=("$2"); shift ;;
        --baseline) baseline="$2"; shift ;;
        *) echo "usage: bash tests/cuda/device_check.sh [--quick | --tests-only] [--model FILE.gguf]... [--baseline SRC.tar.xz]" >&2; exit 2 ;;
    esac
    shift
done

summary=()
note() { printf '%s\n' "$*"; summary+=("$*"); }
started=$SECONDS
elapsed() { echo "$((SECONDS - started)) s"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "device_check: no NVIDIA GPU visible (nvidia-smi); nothing to check" >&2
    exit 77
fi
gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')"
note "GPU: $gpu (compute capability ${cap:0:${#cap}-1}.${cap: -1}); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
note "nvcc: $(nvcc --version | tail -1)"

prefix_args=()
if [[ -n "${ARBOR_DEPS_PREFIX:-}" ]]; then
    prefix_args=(-DCMAKE_PREFIX_PATH="$ARBOR_DEPS_PREFIX")
    export LD_LIBRARY_PATH="$ARBOR_DEPS_PREFIX/lib/x86_64-linux-gnu:$ARBOR_DEPS_PREFIX/lib:${LD_LIBRARY_PATH:-}"
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

configure() {  # source, build
    cmake -S "$1" -B "$2" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DARBOR_ENGINE_ONLY=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$cap" "${prefix_args[@]}" >"$2.configure.log" 2>&1
}
echo "==> configure and build ($BUILD)"
if ! configure "$REPO_ROOT" "$BUILD"; then
    tail -30 "$BUILD.configure.log"
    note "FAILED: configure (see $BUILD.configure.log)"
    printf '%s\n' "${summary[@]}"
    exit 1
fi
# What the run uses, not the whole tree (its CPU suites run in CI): a minute less of the
# device's time.
readonly TARGETS=(arbor_cuda arbor-synth arbor-bench arbor-bench-cuda test_cuda_kernels test_cuda_backend)
if ! cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]}" >"$BUILD.build.log" 2>&1; then
    grep -E "error|FAILED" "$BUILD.build.log" | head -30
    note "FAILED: build (see $BUILD.build.log)"
    printf '%s\n' "${summary[@]}"
    exit 1
fi
note "built in $(elapsed)"
base_bench=""
if [[ -n "$baseline" ]]; then
    mkdir -p "$BUILD-base-src"
    if tar -xJf "$baseline" -C "$BUILD-base-src" && configure "$BUILD-base-src" "$BUILD-base" &&
        cmake --build "$BUILD-base" -j "$(nproc)" --target arbor-bench arbor_cuda >"$BUILD-base.build.log" 2>&1; then
        base_bench="$BUILD-base/tests/bench/arbor-bench"
        note "baseline built in $(elapsed)"
    else
        note "FAILED: building the baseline (see $BUILD-base.build.log)"
    fi
fi

bin="$BUILD/tests"
mkdir -p "$MODELS"
synth() {  # name, arbor-synth arguments...
    local name="$1"; shift
    [[ -f "$MODELS/$name.gguf" ]] || "$bin/bench/arbor-synth" "$@" --seed 7 --out "$MODELS/$name.gguf" >/dev/null ||
        note "FAILED: writing synthetic model $name"
    echo "$MODELS/$name.gguf"
}
# Small models of other shapes for the parity tests: GQA 4 and head size 64 (llama,
# tied), qwen2 biases and neox RoPE with head size 128 (untied), the default model's
# shape, and the k-quant types.
test_models=(
    "$(synth tiny-llama-q4_k --shape tiny --type q4_k --arch llama --layers 4 --embd 256 --heads 8 --kv-heads 2 --head-dim 32 --ff 512 --vocab 2048)"
    "$(synth tiny-qwen2-q8_0 --shape tiny --type q8_0 --arch qwen2 --untied --layers 3 --embd 512 --heads 4 --kv-heads 2 --head-dim 128 --ff 1024 --vocab 2048)"
    "$(synth tiny-llama-q6_k --shape tiny --type q6_k --arch llama --layers 2 --embd 512 --heads 8 --kv-heads 8 --head-dim 64 --ff 768 --vocab 1024)"
    "$(synth tiny-llama-q5_k --shape tiny --type q5_k --arch llama --layers 2 --embd 256 --heads 4 --kv-heads 1 --head-dim 64 --ff 512 --vocab 1024)"
    "$(synth smollm2-135m-q4_1 --shape 135m --type q4_1)"
)
note "models written ($(elapsed))"

failed=0
run_suite() {  # name, command...
    local name="$1"; shift
    local log="$BUILD/$name.log"
    timeout 300 "$@" >"$log" 2>&1
    local rc=$?
    grep -E "^(FAIL|SKIP)|^  " "$log" | head -40
    local line; line="$(tail -1 "$log")"
    if [[ $rc -eq 0 ]]; then note "$name: $line"
    else note "FAILED: $name (exit $rc): $line"; failed=1; fi
}
echo "==> GPU tests"
run_suite test_cuda_kernels "$bin/cuda/test_cuda_kernels"
run_suite test_cuda_backend "$bin/cuda/test_cuda_backend" "${test_models[@]}"
if [[ ${#extra_models[@]} -gt 0 ]]; then
    run_suite test_cuda_backend_given_models "$bin/cuda/test_cuda_backend" --greedy-identical "${extra_models[@]}"
fi
note "tests done ($(elapsed))"

if [[ $tests_only -eq 1 ]]; then
    printf '\n%s\n' "${summary[@]}"
    exit $failed
fi
echo "==> GPU benchmarks"
kernels_out="$(timeout 120 "$bin/cuda/arbor-bench-cuda" 2>&1)" || { note "FAILED: arbor-bench-cuda"; failed=1; }
note "arbor-bench-cuda (the kernels alone)"
while IFS= read -r l; do [[ "$l" == \|* || "$l" == device* ]] && note "    $l"; done <<<"$kernels_out"
# The integer products with no row split over two warps (the default splits rows of
# 2048 columns and more).
for units in 100000; do
    out="$(ARBOR_CUDA_Q8_SPLIT_UNITS=$units timeout 120 "$bin/cuda/arbor-bench-cuda" 2>&1)"
    note "arbor-bench-cuda, Q4_K int8 rows, ARBOR_CUDA_Q8_SPLIT_UNITS=$units"
    while IFS= read -r l; do [[ "$l" == *"Q4_K int8"* ]] && note "    $l"; done <<<"$out"
done
bench() {  # model, arbor-bench arguments...
    local model="$1"; shift
    local out exe="${BENCH_EXE:-$bin/bench/arbor-bench}" label="${BENCH_LABEL:-arbor-bench}"
    out="$(timeout 240 "$exe" --model "$model" --device cuda "$@" 2>&1)" || {
        note "FAILED: $label $(basename "$model") $*: $(echo "$out" | tail -1)"; failed=1; return; }
    note "$label $(basename "$model") $*"
    while IFS= read -r l; do [[ "$l" == \|* ]] && note "    $l"; done <<<"$out"
    # Decode streams every weight once per token: tokens/s x file size ~ weight bytes read per second.
    local tps bytes
    tps="$(awk -F'|' '$2 ~ /tg[0-9]/ {gsub(/ /, "", $4); split($4, a, "±"); print a[1]; exit}' <<<"$out")"
    bytes="$(stat -c %s "$model")"
    [[ -n "$tps" ]] && note "    decode reads the weights at $(awk -v t="$tps" -v b="$bytes" 'BEGIN {printf "%.0f GB/s (%.2f GB a token)", t * b / 1e9, b / 1e9}')"
}
bench_models=("$MODELS/smollm2-135m-q4_1.gguf" "$(synth llama-1b-q4_k --shape 1b --type q4_k)" "${extra_models[@]}")
[[ $quick -eq 0 ]] && bench_models+=("$(synth llama-8b-q4_k --shape 8b --type q4_k)")
for m in "${bench_models[@]}"; do
    bench "$m" --prompt-tokens 512 --gen-tokens 128 -r 3
    bench "$m" --prompt-tokens 512 --gen-tokens 128 --depth 4096 -r 2
    bench "$m" --workload concurrent --chats 1,8,32,64 -r 1
done
# Decode on int8 activations (the --int8-activations option), beside the float default.
if [[ $quick -eq 0 ]]; then
    note "with --int8-activations (decode products in int8 with dp4a):"
    bench "$MODELS/llama-8b-q4_k.gguf" --prompt-tokens 512 --gen-tokens 128 -r 2 --int8-activations
    bench "$MODELS/llama-8b-q4_k.gguf" --workload concurrent --chats 1,8,32 -r 1 --int8-activations
fi
# Where a decode step's time goes (ARBOR_CUDA_PROFILE=1: the graph's GPU time, each
# stage's, and the host's time in and between forwards), and int8 decode with each kernel
# waiting for the one before to end (ARBOR_CUDA_PDL=0) beside the default in the same run.
if [[ $quick -eq 0 ]]; then
    for opt in "" --int8-activations; do
        out="$(ARBOR_CUDA_PROFILE=1 timeout 120 "$bin/bench/arbor-bench" --model "$MODELS/llama-8b-q4_k.gguf" \
            --device cuda --prompt-tokens 64 --gen-tokens 64 -r 1 $opt 2>&1)"
        note "decode step profile, llama-8b-q4_k ${opt:-(float activations)}:"
        while IFS= read -r l; do [[ "$l" == "cuda profile:"* ]] && note "    $l"; done <<<"$out"
    done
    for units in 100000; do
        note "int8 decode with ARBOR_CUDA_Q8_SPLIT_UNITS=$units (no row split; default 64):"
        ARBOR_CUDA_Q8_SPLIT_UNITS=$units bench "$MODELS/llama-8b-q4_k.gguf" --prompt-tokens 512 --gen-tokens 128 -r 2 \
            --int8-activations
    done
    note "int8 decode with kernels launched one after another (ARBOR_CUDA_PDL=0), then overlapping:"
    ARBOR_CUDA_PDL=0 bench "$MODELS/llama-8b-q4_k.gguf" --prompt-tokens 512 --gen-tokens 128 -r 2 --int8-activations
    bench "$MODELS/llama-8b-q4_k.gguf" --prompt-tokens 512 --gen-tokens 128 -r 2 --int8-activations
fi
if [[ -n "$base_bench" && $quick -eq 0 ]]; then
    for opt in "" --int8-activations; do
        note "the baseline's arbor-bench and this one's, alternating ${opt}:"
        for round in 1 2; do
            BENCH_EXE="$base_bench" BENCH_LABEL="baseline" bench "$MODELS/llama-8b-q4_k.gguf" \
                --prompt-tokens 512 --gen-tokens 128 -r 1 $opt
            bench "$MODELS/llama-8b-q4_k.gguf" --prompt-tokens 512 --gen-tokens 128 -r 1 $opt
        done
    done
fi
note "benchmarks done ($(elapsed))"

echo
echo "==================== summary ===================="
printf '%s\n' "${summary[@]}"
if [[ -n "${ARBOR_CHECK_OUT:-}" ]]; then
    mkdir -p "$ARBOR_CHECK_OUT"
    printf '%s\n' "${summary[@]}" >"$ARBOR_CHECK_OUT/summary.txt"
    cp "$BUILD"/*.log "$ARBOR_CHECK_OUT/" 2>/dev/null
fi
exit $failed
