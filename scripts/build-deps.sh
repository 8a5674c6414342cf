#!/usr/bin/env bash
# The system packages the build links and the tests call: pkg-config and
# OpenSSL's headers (libssl-dev; the `openssl` crate behind AS2's CMS) and the
# openssl command (the AS2 tests check against it). Installed from Debian's
# packages when missing and we are root; otherwise says what is missing.
# Run by `make lint`, `make build` and scripts/test.sh, before cargo.
set -euo pipefail

have() {
    command -v pkg-config >/dev/null 2>&1 && pkg-config --exists openssl && command -v openssl >/dev/null 2>&1
}

have && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[build-deps] installing pkg-config, libssl-dev and openssl" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkg-config libssl-dev openssl >&2
else
    echo "[build-deps] pkg-config, OpenSSL's headers (libssl-dev) or the openssl command are missing: install them" >&2
    exit 1
fi
