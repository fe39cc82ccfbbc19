#!/usr/bin/env bash
# Regenerates the pictures of docs/scenarios.md: for two tour scenarios,
# the sequence diagram (docs/img/NAME.svg, from verbsim run -svg) and a
# screenshot of the stepping page (docs/img/NAME.png, from verbsim run
# -html, rendered by headless Chromium at the step given). Needs chromium
# (apt-get install -y chromium) for the PNGs; without it only the SVGs are
# rewritten. Run from the repository root: bash scripts/scenario-pictures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/img
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/verbsim" ./cmd/verbsim
chromium=${CHROMIUM:-/usr/bin/chromium}
# name, the step the screenshot shows
for pair in "06-lost-wakeup 8" "13-remote-access 16"; do
	set -- $pair
	name=$1 step=$2
	"$tmp/verbsim" run -svg "$out/$name.svg" -html "$tmp/$name.html" "$name" >/dev/null
	echo "wrote $out/$name.svg"
	if [ ! -x "$chromium" ]; then
		echo "no $chromium: $out/$name.png left as it was" >&2
		continue
	fi
	"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/profile-$name" --enable-logging=stderr --v=0 \
		--screenshot="$out/$name.png" --window-size=1400,900 \
		"file://$tmp/$name.html#$step" 2>"$tmp/$name.log" >/dev/null
	if grep -E 'Uncaught|CONSOLE' "$tmp/$name.log"; then
		echo "$name.html: console errors (above)" >&2
		exit 1
	fi
	echo "wrote $out/$name.png (step $step)"
done
