#!/usr/bin/env bash
# install-deps.sh PKG...: installs the Debian packages whose commands the
# tests need (gunicorn, nginx, prometheus/promtool, chromium) when they are
# missing. apt-get needs root; without it, say what is missing and fail.
set -euo pipefail

declare -A cmd_of=([prometheus]=promtool [gunicorn]=gunicorn [nginx]=nginx [chromium]=chromium [prometheus-node-exporter]=prometheus-node-exporter)
missing=()
for pkg in "$@"; do
  c=${cmd_of[$pkg]:-$pkg}
  command -v "$c" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root for apt-get install ${missing[*]} (run as root, or install them yourself)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Packaged services may start on install; the tests start their own.
for svc in "${missing[@]}"; do
  if command -v systemctl >/dev/null 2>&1; then systemctl stop "$svc" >/dev/null 2>&1 || true; fi
done
