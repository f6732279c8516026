#!/usr/bin/env bash
# Exports every bundled capture (one dataset per definition) and checks with DuckDB
# that SQL over the export reproduces `analyze --json` (scripts/export-check.py).
# Usage: scripts/export-check.sh [GPCAP]   (pip install duckdb)
set -euo pipefail
cd "$(dirname "$0")/.."
g=${1:-./target/release/gpcap}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
article="captures/article.pcap captures/clean.pcap captures/lossy-bursts.pcap captures/mtu-ignored.pcap captures/mtu-df.pcap captures/attacks.pcap captures/malformed.pcap"
shooter="captures/ipv6-sll2.pcapng captures/vlan-corrupt.pcap"
# shellcheck disable=SC2086
$g export -d dissectors/article.kdl $article -o "$out/article" 2> /dev/null
# shellcheck disable=SC2086
$g export -d dissectors/example-shooter.kdl $shooter -o "$out/shooter" 2> /dev/null
# shellcheck disable=SC2086
python3 scripts/export-check.py "$g" dissectors/article.kdl "$out/article" $article
# shellcheck disable=SC2086
python3 scripts/export-check.py "$g" dissectors/example-shooter.kdl "$out/shooter" $shooter
