#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (never a downloaded browser); a CJK font makes the
# Chinese UI legible in their screenshots. Install what is missing.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -d /usr/share/fonts/truetype/wqy ] || need+=(fonts-wqy-microhei)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing for the browser tests: ${need[*]}. Run: sudo apt-get install -y ${need[*]}" >&2
  [ -x /usr/bin/chromium ] || exit 1
  exit 0
fi
echo "Installing Debian packages for the browser tests: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
