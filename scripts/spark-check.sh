#!/usr/bin/env bash
# A fleet's dataset on a distributed engine: exports the bundled captures, three
# generated ones and the netcode.io + reliable.io capture decrypted with its layers, with
# --partition (two days, one dataset per definition), and checks that
# the Spark job (scripts/spark-job.py, PySpark in local mode) reproduces
# `analyze --per-file --json` for every capture. Exit 1 on any difference.
# Usage: scripts/spark-check.sh [GPCAP]   (pip install pyspark; Java 17+)
set -euo pipefail
cd "$(dirname "$0")/.."
g=${1:-./target/release/gpcap}
out=$(mktemp -d)
# KEEP=1 keeps the dataset and the reports (named on stdout) to query them by hand.
if [ -n "${KEEP:-}" ]; then echo "dataset and reports kept in $out"; else trap 'rm -rf "$out"' EXIT; fi
article=(captures/article.pcap captures/clean.pcap captures/lossy-bursts.pcap captures/mtu-ignored.pcap
    captures/mtu-df.pcap captures/attacks.pcap captures/malformed.pcap)
shooter=(captures/ipv6-sll2.pcapng captures/vlan-corrupt.pcap)
# Generated: loss, duplicates, reordering on several clients; a name the partition
# directory must percent-encode (a space).
$g gen -d dissectors/article.kdl -o "$out/gen lossy.pcap" --seed 7 --duration 3 --clients 3 \
    --loss 0.03 --dup 0.01 --reorder 0.02 > /dev/null 2>&1
$g gen -d dissectors/example-shooter.kdl -o "$out/gen-shooter.pcapng" --seed 3 --duration 3 --clients 2 \
    --burst 0.02,0.3,0.7 --ipv6 > /dev/null 2>&1
# netcode.io: no checksum (crc_ok counts validated datagrams), 64-bit sequences per sender.
$g gen -d dissectors/netcode.kdl -o "$out/gen-netcode.pcap" --seed 5 --duration 3 --clients 2 \
    --loss 0.02 > /dev/null 2>&1
article+=("$out/gen lossy.pcap")
shooter+=("$out/gen-shooter.pcapng")
export_day() { # DEFINITION DATASET DAY CAPTURE...
    local def=$1 dir=$2 day=$3
    shift 3
    $g export -d "$def" "$@" -o "$dir" --partition "day=$day" --partition site=ci 2> /dev/null
}
export_day dissectors/article.kdl "$out/article" 2026-11-23 "${article[@]:0:4}"
export_day dissectors/article.kdl "$out/article" 2026-11-24 "${article[@]:4}"
export_day dissectors/example-shooter.kdl "$out/shooter" 2026-11-24 "${shooter[@]}"
export_day dissectors/netcode.kdl "$out/netcode" 2026-11-24 "$out/gen-netcode.pcap"
$g analyze --per-file --json -d dissectors/netcode.kdl "$out/gen-netcode.pcap" > "$out/netcode.json"
# Protocols inside protocols: the netcode.io + reliable.io conformance capture with its key
# (the dataset holds layer=reliable/ and layer=game/ beside the decrypted outer tables).
nr=tests/fixtures/netcode-reliable
key=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["private_key"])' "$nr/truth_keys.jsonl")
stack=(-d dissectors/netcode.kdl -d dissectors/reliable.kdl -d dissectors/yojimbo-messages.kdl
    --key "$key" --protocol-id 0x3141592653589793)
$g export "${stack[@]}" "$nr/capture.pcap" -o "$out/layered" --partition day=2026-11-24 --partition site=ci 2> /dev/null
$g analyze --per-file --json "${stack[@]}" "$nr/capture.pcap" > "$out/layered.json"
$g analyze --per-file --json -d dissectors/article.kdl "${article[@]}" > "$out/article.json"
$g analyze --per-file --json -d dissectors/example-shooter.kdl "${shooter[@]}" > "$out/shooter.json"
# Spark's own log (JVM warnings) is shown only when the job fails.
if ! python3 scripts/spark-job.py "$out/article" "$out/shooter" "$out/netcode" "$out/layered" \
    --expect "$out/article.json" --expect "$out/shooter.json" --expect "$out/netcode.json" \
    --expect "$out/layered.json" 2> "$out/spark.log"; then
    tail -n 40 "$out/spark.log" >&2
    exit 1
fi
