#!/usr/bin/env python3
"""Per-capture figures of a `gpcap export` dataset, computed by Spark.

The same job runs on a laptop (`--master local[2]`) and on a cluster (`spark-submit`,
the dataset in object storage): docs/export.md, "Spark". For every capture (every
partition of `packets`) it computes from the rows of `packets` what `gpcap analyze`
reports: datagrams and their status, per-flow counts, bytes, first and last time, types,
fragments and the packets they opened and completed, reassembled packets, malformed
packets by cause, rows of every type table; and it reads the figures that rest on the
analyzer's state (sequence loss, duplicates, late; fragment-loss amplification) from the
report tables `flows`, `reassembly` and `mtu`.

    spark-job.py DATASET... [--out DIR] [--expect REPORT.json]... [--master URL]

DATASET: an export's output directory (a local path, s3a://, hdfs://, gs://, abfss://),
one per definition (their tables have different columns). `--out DIR` writes the
figures as Parquet: DIR/captures (one row per capture) and DIR/flows (one per flow and
direction), partitioned as the dataset is. `--expect` takes files of
`gpcap analyze --per-file --json` and fails (exit 1) on any figure that differs,
printing each difference; captures are matched by file name, which must then be unique
in the datasets.
"""
import argparse
import json
import os
import re
import sys
import time
from decimal import Decimal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

# The columns of `packets` (docs/export.md): the rest are partition keys (`capture`, and
# those given with --partition).
PACKET_COLUMNS = {
    "frame", "row", "ts", "ts_ns", "src_ip", "src_port", "dst_ip", "dst_port", "size",
    "wire_len", "ip_fragments", "over_budget", "status", "crc_ok", "fault_kind",
    "fault_field", "fault_bit", "sequence", "type_id", "type_name", "fragment_id",
    "fragment_count", "opens", "completes", "fragment_frames", "ack", "ack_bits", "header",
    "fragment_header",
}
FLOW = ["src_ip", "src_port", "dst_ip", "dst_port"]
# The datagrams analyze validated (a packet type read): counted by type, fragments among them.
def valid():
    return F.col("status").isin("ok", "malformed") & F.col("type_id").isNotNull()


def count_if(cond):
    return F.sum(F.when(cond, 1).otherwise(0)).cast("long")


def crc_rule(p: DataFrame):
    """analyze's `crc_ok` as a per-group count: datagrams whose checksum held or, for a
    protocol that declares none (`crc_ok` null on validated rows), datagrams validated.
    Null when the dataset cannot tell which: no checksum seen and no datagram validated,
    but unreadable headers (analyze counts those only without a checksum)."""
    seen = p.agg(
        F.max(F.col("crc_ok").isNotNull()).alias("checked"),
        F.max(F.col("status").isin("ok", "malformed") & F.col("crc_ok").isNull()).alias("unchecked"),
    ).first()

    def count(where):
        if seen["checked"]:
            return count_if(where & F.col("crc_ok"))
        validated = count_if(where & F.col("status").isin("ok", "malformed", "bad_header"))
        if seen["unchecked"]:
            return validated
        return F.when(count_if(where & (F.col("status") == "bad_header")) == 0, validated)

    return count


def bucket_top(size):
    """The top of analyze's size bucket holding `size`: 16-byte buckets below 4 KiB, then 256."""
    fine = (F.floor(size / 16) + 1) * 16 - 1
    coarse = 4096 + (F.floor((F.least(size, F.lit(65535)) - 4096) / 256) + 1) * 256 - 1
    return F.when(size < 4096, fine).otherwise(coarse)


def sizes(d: DataFrame, keys: list[str]) -> DataFrame:
    """Per flow, analyze's payload-size percentiles: the top of the bucket that holds the
    k-th smallest size, k = ceil(n * q), at most the largest size."""
    flow = [*keys, *FLOW]
    ranked = d.select(
        *flow,
        "size",
        F.row_number().over(Window.partitionBy(*flow).orderBy("size")).alias("i"),
        F.count("*").over(Window.partitionBy(*flow)).alias("n"),
    )
    at = {
        q: F.max(F.when(F.col("i") == F.greatest(F.ceil(F.col("n") * q), F.lit(1)), F.col("size")))
        for q in PERCENTILES.values()
    }
    return ranked.groupBy(*flow).agg(
        *(F.least(bucket_top(at[q]), F.max("size")).cast("long").alias(p) for p, q in PERCENTILES.items())
    )


def _fs(spark: SparkSession, dataset: str):
    """Hadoop's file system of the dataset (any scheme: a local path, s3a://, hdfs://)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(dataset)
    return jvm, path.getFileSystem(conf), path


def capture_dirs(spark: SparkSession, dataset: str) -> list:
    """Every capture's directory, `[KEY=VALUE/...]capture=NAME`. Hidden names (`.capture=NAME.staging-PID`,
    an export still being written) are skipped, as Spark's own listing skips them."""
    _, fs, root = _fs(spark, dataset)
    out, stack = [], [root]
    while stack:
        for st in fs.listStatus(stack.pop()):
            name = st.getPath().getName()
            if not st.isDirectory() or name.startswith((".", "_")) or "=" not in name:
                continue
            (out if name.startswith("capture=") else stack).append(st.getPath())
    return out


def tables(spark: SparkSession, dataset: str) -> list[str]:
    """The dataset's table names: the directories in its captures' directories."""
    _, fs, _ = _fs(spark, dataset)
    names = set()
    for c in capture_dirs(spark, dataset):
        names.update(st.getPath().getName() for st in fs.listStatus(c) if st.isDirectory())
    return sorted(n for n in names if "=" not in n and not n.startswith((".", "_")))


def read_table(spark: SparkSession, dataset: str, name: str) -> DataFrame:
    """Table `name` of every capture, with the partition keys above it (`capture` among
    them) as columns: `basePath` makes Spark read them from the directories' names."""
    jvm, fs, _ = _fs(spark, dataset)
    paths = [p.toString() + "/" + name for p in capture_dirs(spark, dataset)]
    paths = [p for p in paths if fs.exists(jvm.org.apache.hadoop.fs.Path(p))]
    return spark.read.option("basePath", dataset.rstrip("/")).parquet(*paths)


def figures(spark: SparkSession, dataset: str) -> tuple[list[str], dict[str, DataFrame]]:
    """The partition keys of one dataset, and its figures as DataFrames keyed by them."""
    p = read_table(spark, dataset, "packets")
    keys = [c for c in p.columns if c not in PACKET_COLUMNS]
    d = p.where(F.col("row") == "datagram")
    crc_ok = crc_rule(p)
    status = {s: count_if(F.col("status") == s) for s in ("crc_mismatch", "too_short", "truncated")}
    flows = d.groupBy(*keys, *FLOW).agg(
        F.count("*").alias("datagrams"),
        F.sum("size").alias("bytes"),
        F.min_by("ts_ns", "frame").alias("first_ns"),
        F.max_by("ts_ns", "frame").alias("last_ns"),
        F.max("size").alias("largest_payload"),
        crc_ok(F.lit(True)).alias("crc_ok"),
        status["crc_mismatch"].alias("crc_mismatch"),
        status["too_short"].alias("too_short"),
        status["truncated"].alias("truncated"),
        # A body a key did not open, or a replay, is counted by cause only, not against
        # the flow's fit.
        count_if(
            (F.col("status") == "bad_header")
            | (
                (F.col("status") == "malformed")
                & ~F.coalesce("fault_kind", F.lit("")).isin("mac_failure", "replayed")
            )
        ).alias("malformed"),
        count_if(valid() & F.col("fragment_id").isNotNull()).alias("fragments"),
        count_if(F.col("ip_fragments") > 1).alias("ip_fragmented"),
        count_if(F.col("over_budget")).alias("over_budget"),
    )
    flows = flows.join(sizes(d, keys), [*keys, *FLOW])
    # Per flow, row kind and type: analyze's `types` and `reassembled_types`.
    flow_types = (
        p.where(((F.col("row") == "datagram") & valid()) | ((F.col("row") == "reassembled") & F.col("type_id").isNotNull()))
        .groupBy(*keys, *FLOW, "row", "type_name")
        .count()
    )
    # Fragmented packets seen (their first fragment received) and completed, per count.
    flow_reassembly = (
        p.where(F.col("fragment_count").isNotNull())
        .groupBy(*keys, *FLOW, F.col("fragment_count").alias("fragments"))
        .agg(count_if(F.col("opens")).alias("seen"), count_if(F.col("completes").isNotNull()).alias("completed"))
    )
    r = F.col("row") == "reassembled"
    captures = p.groupBy(*keys).agg(
        count_if(~r).alias("examined"),
        crc_ok(~r).alias("crc_ok"),
        *(count_if(~r & c).alias(s) for s, c in (
            ("crc_mismatch", F.col("status") == "crc_mismatch"),
            ("too_short", F.col("status") == "too_short"),
            ("truncated", F.col("status") == "truncated"),
            ("packets", valid() & F.col("fragment_id").isNull()),
            ("fragments", valid() & F.col("fragment_id").isNotNull()),
        )),
        count_if(r).alias("reassembled"),
        count_if(r & (F.col("status") == "ok")).alias("reassembled_ok"),
        count_if(r & F.col("status").isin("crc_mismatch", "too_short")).alias("reassembled_crc_mismatch"),
        count_if(r & ~F.col("status").isin("ok", "crc_mismatch", "too_short")).alias("reassembled_malformed"),
        F.min("ts_ns").alias("first_ns"),
        F.max("ts_ns").alias("last_ns"),
        # `ts` is a timestamp as it is, no cast: to the microsecond the exact `ts_ns`.
        count_if(F.unix_micros("ts") == F.expr("(ts_ns - pmod(ts_ns, 1000)) div 1000")).alias("ts_exact"),
        F.count_distinct(F.date_trunc("second", "ts")).alias("seconds"),
    )
    # Malformed packets by cause: a datagram's fault once validated, a reassembled packet's.
    malformed = (
        p.where(F.col("fault_kind").isNotNull() & (r | valid()))
        .groupBy(*keys, "fault_kind")
        .count()
    )
    out = {
        "captures": captures,
        "flows": flows,
        "flow_types": flow_types,
        "flow_reassembly": flow_reassembly,
        "malformed": malformed,
    }
    # Rows of every type table (a message protocol's: one per message), per capture.
    rows = None
    names = tables(spark, dataset)
    for name in names:
        # A list's child table (`type_scene__objects`) holds elements, not packets.
        if not name.startswith("type_"):
            continue
        t = read_table(spark, dataset, name)
        if "reassembled" not in t.columns:
            continue
        n = t.groupBy(*keys).count().withColumn("table", F.lit(name))
        rows = n if rows is None else rows.unionByName(n)
    if rows is not None:
        out["type_rows"] = rows
    # The analyzer's state, exported as report tables.
    for name in ("flows", "reassembly", "mtu"):
        if name in names:
            out["report_" + name] = read_table(spark, dataset, name)
    return keys, out


def children(spark: SparkSession, dataset: str, partitions: list[str]) -> int:
    """Each child table joined with its parent (a list's elements with the packet or the
    element holding the list, docs/export.md): every row meets exactly one parent row,
    and the parent's length column sums to the rows. The number of tables that do not."""
    failures = 0
    names = tables(spark, dataset)
    frames = {n: read_table(spark, dataset, n) for n in names}
    # A list's table has no `reassembled` (a type's has): `type_B__items` may be a type.
    lists = [n for n in names if n.startswith(("type_", "packets__")) and "reassembled" not in frames[n].columns]
    for name in lists:
        # The parent: the longest table whose name and `__` begin this one's; the length
        # column is the rest, less a `_N` a colliding table name was given.
        parent_name = max((n for n in names if name.startswith(n + "__")), key=len)
        last = name[len(parent_name) + 2 :]
        pcols = frames[parent_name].columns
        if last.split(".")[0] not in pcols and re.sub(r"_\d+$", "", last).split(".")[0] in pcols:
            last = re.sub(r"_\d+$", "", last)
        c, p = frames[name].alias("c"), frames[parent_name].alias("p")
        keys = c.columns[: c.columns.index("index")]
        on = [F.col(f"c.{k}") == F.col(f"p.{k}") for k in (*partitions, "frame")]
        # A header's list: the datagram's row of `packets` (whose `row` is its kind).
        on.append(F.col("p.row") == "datagram" if parent_name == "packets" else F.col("c.row") == F.col("p.row"))
        if parent_name in lists:
            above = keys[2:]
            on += [F.col(f"c.{k}") == F.col(f"p.{k}") for k in above[:-1]] + [F.col(f"c.{above[-1]}") == F.col("p.index")]
        rows, joined = c.count(), c.join(p, on).count()
        length = p.agg(F.sum(F.col(f"`{last}`") if "." not in last else F.col(last))).first()[0] or 0
        ok = rows == joined == length
        print(f"  {name}: {rows} rows, {'each joins its parent, as its lengths say' if ok else f'{joined} joined, lengths sum to {length}: DIFFERENT'}")
        failures += not ok
    return failures


# --- the check against `analyze --per-file --json` ------------------------------------


def endpoint(ip, port):
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def rows(df: DataFrame):
    """The rows as dicts, unsigned 64-bit columns (Spark's decimal(20,0)) as ints."""
    for row in df.collect():
        yield {k: int(v) if isinstance(v, Decimal) else v for k, v in row.asDict().items()}


def collect(frames: dict[str, DataFrame]) -> dict[str, dict]:
    """The figures per capture file name, shaped as the projection of the report below."""
    caps: dict[str, dict] = {}

    def cap(row):
        name = row["capture"]
        if name not in caps:
            caps[name] = {"flows": {}, "malformed": {}, "type_rows": {}, "reassembly_rows": [], "mtu": {}}
        return caps[name]

    seen_keys = {}
    for row in rows(frames["captures"]):
        key = tuple(sorted((k, str(v)) for k, v in row.items() if k not in CAPTURE_FIGURES))
        if row["capture"] in seen_keys:
            sys.exit(f"spark-job: capture {row['capture']} is in two partitions ({seen_keys[row['capture']]} and {key}): --expect needs unique names")
        seen_keys[row["capture"]] = key
        c = cap(row)
        c["validation"] = {k: row[k] for k in ("examined", "crc_ok", "crc_mismatch", "too_short", "truncated", "packets", "fragments")}
        c["reassembled"] = {
            "completed": row["reassembled"],
            "dissected_ok": row["reassembled_ok"],
            "crc_mismatch": row["reassembled_crc_mismatch"],
            "malformed": row["reassembled_malformed"],
        }
        c["ts"] = (row["ts_exact"], row["examined"] + row["reassembled"], row["seconds"])

    def flow(row):
        f = cap(row)["flows"].setdefault(
            (endpoint(row["src_ip"], row["src_port"]), endpoint(row["dst_ip"], row["dst_port"])),
            {"types": {}, "reassembled_types": {}, "reassembly": {}},
        )
        return f

    for row in rows(frames["flows"]):
        f = flow(row)
        for k in FLOW_FIGURES:
            f[k] = row[k]
        f["duration_s"] = max(row["last_ns"] - row["first_ns"], 0) / 1e9
        f["sizes"] = {p: row[p] for p in PERCENTILES} | {"max": row["largest_payload"]}
    for row in rows(frames["flow_types"]):
        flow(row)["types" if row["row"] == "datagram" else "reassembled_types"][row["type_name"]] = row["count"]
    for row in rows(frames["flow_reassembly"]):
        if row["seen"] or row["completed"]:
            flow(row)["reassembly"][int(row["fragments"])] = {"seen": row["seen"], "completed": row["completed"]}
    for row in rows(frames["malformed"]):
        cap(row)["malformed"][row["fault_kind"]] = row["count"]
    if "type_rows" in frames:
        for row in rows(frames["type_rows"]):
            cap(row)["type_rows"][row["table"][len("type_"):]] = row["count"]
    if "report_flows" in frames:
        for row in rows(frames["report_flows"]):
            flow(row)["seq"] = {k: row["seq_" + k] for k in SEQ_FIGURES}
    if "report_reassembly" in frames:
        for row in rows(frames["report_reassembly"]):
            cap(row)["reassembly_rows"].append({k: row[k] for k in REASSEMBLY_ROW})
    if "report_mtu" in frames:
        for row in rows(frames["report_mtu"]):
            m = cap(row)["mtu"]
            m[row["finding"]] = m.get(row["finding"], 0) + 1
    for c in caps.values():
        c["reassembly_rows"].sort(key=lambda x: x["fragments"])
        for f in c["flows"].values():
            f.setdefault("seq", None)
    return caps


CAPTURE_FIGURES = {
    "examined", "crc_ok", "crc_mismatch", "too_short", "truncated", "packets", "fragments",
    "reassembled", "reassembled_ok", "reassembled_crc_mismatch", "reassembled_malformed",
    "first_ns", "last_ns", "ts_exact", "seconds",
}
FLOW_FIGURES = (
    "datagrams", "bytes", "first_ns", "last_ns", "largest_payload", "crc_ok", "crc_mismatch",
    "too_short", "truncated", "malformed", "fragments", "ip_fragmented", "over_budget",
)
PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}
SEQ_FIGURES = ("received", "lost", "duplicates", "late", "first", "last")
REASSEMBLY_ROW = (
    "fragments", "seen", "completed", "lost", "observed_loss", "predicted_loss", "amplification", "bytes_wasted",
)


def project(report: dict) -> dict:
    """The figures of one `analyze --json` report that the export reproduces."""
    names = report.get("type_names") or []

    def by_name(counts):
        return {names[i]: n for i, n in enumerate(counts) if n}

    flows = {}
    for f in report["flows"]:
        flows[(f["src"], f["dst"])] = {
            **{k: f[k] for k in FLOW_FIGURES},
            "duration_s": f["duration_s"],
            "sizes": f["sizes"],
            "types": by_name(f["types"]),
            "reassembled_types": by_name(f["reassembled_types"]),
            "reassembly": {
                int(n): {"seen": c["seen"], "completed": c["completed"]}
                for n, c in f["reassembly"].items()
                if c["seen"] or c["completed"]
            },
            "seq": {k: f["seq"][k] for k in SEQ_FIGURES},
        }
    # A type table's rows: its datagrams and reassembled packets, or its messages.
    if report.get("messages"):
        type_rows = {k: v for k, v in report["messages"]["by_type"].items() if v}
    else:
        type_rows = {}
        for f in report["flows"]:
            for i, n in enumerate(f["types"]):
                if n and names[i] != "fragment":
                    type_rows[names[i]] = type_rows.get(names[i], 0) + n
            for i, n in enumerate(f["reassembled_types"]):
                if n:
                    type_rows[names[i]] = type_rows.get(names[i], 0) + n
    v = report["validation"]
    r = report["reassembly"]
    m = report["mtu"]
    mtu = {"ip_fragmented": len(m["ip_fragmented_list"]), "icmp_too_big": len(m["icmp"])}
    return {
        "validation": {k: v[k] for k in ("examined", "crc_ok", "crc_mismatch", "too_short", "truncated", "packets", "fragments")},
        "reassembled": {k: r[k] for k in ("completed", "dissected_ok", "crc_mismatch", "malformed")},
        "flows": flows,
        "malformed": dict(report["malformed"]["by_cause"]),
        "type_rows": type_rows,
        "reassembly_rows": [{k: x[k] for k in REASSEMBLY_ROW} for x in r["rows"]],
        "mtu": {k: n for k, n in mtu.items() if n},
    }


def diff(path, got, want, out) -> int:
    """Appends to `out` every figure that differs; returns how many were compared."""
    if isinstance(want, dict) and isinstance(got, dict):
        keys = sorted(set(got) | set(want), key=str)
        return sum(diff(f"{path}.{k}" if path else str(k), got.get(k), want.get(k), out) for k in keys)
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return sum(diff(f"{path}[{i}]", g, w, out) for i, (g, w) in enumerate(zip(got, want)))
    # Exactly: the same integers, the same floats (a float is written and read whole).
    if got != want or type(got) is not type(want) and {type(got), type(want)} != {int, float}:
        out.append(f"  {path}: spark {got!r}, analyze {want!r}")
    return 1


def check(caps: dict[str, dict], expect: list[str]) -> int:
    failures = 0
    unchecked = set(caps)
    for path in expect:
        with open(path) as fh:
            reports = json.load(fh)
        for report in reports if isinstance(reports, list) else [reports]:
            name = os.path.basename(report["capture"]["files"][0]["name"])
            got = caps.get(name)
            unchecked.discard(name)
            if got is None:
                print(f"{name}: not in the dataset")
                failures += 1
                continue
            want = project(report)
            exact, rows, seconds = got["ts"]
            out = []
            if exact != rows:
                out.append(f"  ts: {rows - exact} of {rows} rows whose ts is not ts_ns to the microsecond")
            compared = diff("", {k: got[k] for k in want}, want, out)
            flows = want["flows"].values()
            print(
                f"{name}: {len(flows)} flows, {want['validation']['examined']} datagrams, "
                f"{sum(sum(f['types'].values()) + sum(f['reassembled_types'].values()) for f in flows)} typed, "
                f"{sum(f['seq']['lost'] for f in flows)} lost, "
                f"{sum(x['seen'] for x in want['reassembly_rows'])} fragmented packets "
                f"({sum(x['lost'] for x in want['reassembly_rows'])} lost), {seconds} seconds: "
                + (f"{compared} figures, all as analyze --json" if not out else f"{len(out)} of {compared} figures DIFFERENT")
            )
            for line in out[:40]:
                print(line)
            failures += bool(out)
    for name in sorted(unchecked):
        print(f"{name}: in the dataset, in no report given with --expect")
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("datasets", nargs="+", metavar="DATASET")
    ap.add_argument("--out", help="write the figures as Parquet under this directory")
    ap.add_argument("--expect", action="append", default=[], metavar="REPORT.json")
    ap.add_argument("--master", help="Spark master (default: spark-submit's, or local[2] when run by python3)")
    a = ap.parse_args()
    started = time.monotonic()
    b = SparkSession.builder.appName("gpcap-figures").config("spark.sql.session.timeZone", "UTC")
    if a.master:
        b = b.master(a.master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Run by python3, not by spark-submit (which starts the JVM first and says where):
        # two local cores, tuned for a small dataset.
        b = (
            b.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            # Small data: adaptive planning costs more than it saves.
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.driver.memory", "512m")
        )
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(f"spark-job: session up in {time.monotonic() - started:.1f} s", flush=True)
    failures = 0
    caps = {}
    for dataset in a.datasets:
        keys, frames = figures(spark, dataset)
        failures += children(spark, dataset, keys)
        if a.out:
            name = os.path.basename(dataset.rstrip("/"))
            for k in ("captures", "flows"):
                frames[k].write.mode("overwrite").partitionBy(*keys).parquet(f"{a.out.rstrip('/')}/{name}/{k}")
        if a.expect:
            for name, c in collect(frames).items():
                if name in caps:
                    sys.exit(f"spark-job: capture {name} is in two datasets: --expect needs unique names")
                caps[name] = c
    if a.expect:
        failures += check(caps, a.expect)
    print(f"spark-job: {len(a.datasets)} datasets in {time.monotonic() - started:.1f} s (Spark {spark.version})")
    spark.stop()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
