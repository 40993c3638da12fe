#!/usr/bin/env bash
# install-deps.sh PKG...: installs the Debian packages the tests need when
# they are missing: a package with a command (gunicorn, nginx, haproxy, apache2, caddy,
# prometheus/promtool, chromium, node) counts as there when its command is
# on PATH, a library (python3-gevent, python3-uvicorn, node-ws) when dpkg
# has it. apt-get needs root; without it, say what is missing and fail.
set -euo pipefail

declare -A cmd_of=([prometheus]=promtool [gunicorn]=gunicorn [nginx]=nginx [haproxy]=haproxy [apache2]=apache2 [caddy]=caddy [chromium]=chromium
  [prometheus-node-exporter]=prometheus-node-exporter [nodejs]=node [systemd]=systemd-analyze)
missing=()
for pkg in "$@"; do
  if [ -n "${cmd_of[$pkg]:-}" ]; then
    command -v "${cmd_of[$pkg]}" >/dev/null 2>&1 || missing+=("$pkg")
  else
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  fi
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
