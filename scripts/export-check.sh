#!/usr/bin/env bash
# Exports every bundled capture (one dataset per definition) and the netcode.io +
# reliable.io conformance capture with its key (each layer's tables), and checks with DuckDB
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
# KCP (real traffic of the unmodified library): one row per PUSH copy in
# stream_messages, its verdicts counted per flow and stream as analyze counts them.
$g export -d dissectors/kcp.kdl tests/fixtures/kcp/capture.pcap -o "$out/kcp" 2> /dev/null
python3 scripts/export-check.py "$g" dissectors/kcp.kdl "$out/kcp" tests/fixtures/kcp/capture.pcap
# Protocols inside protocols: netcode.io decrypted with the server's key, carrying
# reliable.io carrying game messages: the outer tables and each layer's (layer=NAME/)
# against analyze's report and its layers[].
nr=tests/fixtures/netcode-reliable
key=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["private_key"])' "$nr/truth_keys.jsonl")
stack=(-d dissectors/reliable.kdl -d dissectors/yojimbo-messages.kdl --key "$key" --protocol-id 0x3141592653589793)
$g export -d dissectors/netcode.kdl "${stack[@]}" "$nr/capture.pcap" -o "$out/layered" 2> /dev/null
more=()
for a in "${stack[@]}"; do more+=(--arg "$a"); done
for layer in "" reliable game; do
    python3 scripts/export-check.py ${layer:+--layer "$layer"} "${more[@]}" "$g" dissectors/netcode.kdl "$out/layered" "$nr/capture.pcap"
done
