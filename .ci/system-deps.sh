#!/usr/bin/env bash
# Installs the system tools the tests need: a real OCI registry (docker-registry), skopeo, umoci,
# htpasswd (apache2-utils), tmux (the scripted TUI walk) and chromium (the classroom-mode browser tests
# drive it with Playwright: its own browser download is not used), zsh and fish (their completion scripts
# are parsed by them). Does nothing when they are all
# present already, so CI machines and developer laptops that have them skip apt entirely.
# Debian/Ubuntu only (apt-get).
set -euo pipefail

PACKAGES=(docker-registry skopeo umoci apache2-utils tmux chromium zsh fish)
COMMANDS=(docker-registry skopeo umoci htpasswd tmux chromium zsh fish)

missing=()
for cmd in "${COMMANDS[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if [ "${#missing[@]}" -eq 0 ]; then
    echo "system-deps: docker-registry, skopeo, umoci, htpasswd, tmux, chromium, zsh and fish are already installed"
    exit 0
fi
echo "system-deps: missing ${missing[*]}; installing ${PACKAGES[*]} with apt-get"

if ! command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: apt-get not found; install ${PACKAGES[*]} (or their equivalents) by hand" >&2
    exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "system-deps: not root and sudo is not available; run as root:" >&2
        echo "  apt-get update && apt-get install -y --no-install-recommends ${PACKAGES[*]}" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get update -q; then
    echo "system-deps: apt-get update failed (no network or no package mirror?)" >&2
    exit 1
fi
if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"; then
    echo "system-deps: apt-get install ${PACKAGES[*]} failed" >&2
    exit 1
fi

for cmd in "${COMMANDS[@]}"; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
        echo "system-deps: $cmd still missing after installing ${PACKAGES[*]}" >&2
        exit 1
    fi
done
echo "system-deps: installed ${PACKAGES[*]}"
