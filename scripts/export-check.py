#!/usr/bin/env python3
"""Reproduces `gpcap analyze --json` from a `gpcap export` dataset with DuckDB.

For every capture given: per-flow datagrams, CRC failures and per-type counts, and the
fragmented packets seen and completed per fragment count, computed by SQL over the
`packets` table alone, must equal the report's flows exactly. Exit 1 on any difference.

With `--layer NAME` (and `--arg ARG`, repeated, for what analyze needs more: further
`-d`, `--key`), the tables of inner layer NAME (`DATASET/capture=FILE/layer=NAME/`) against that
layer's report in `layers[]`.

Usage: scripts/export-check.py [--layer NAME] [--arg ARG]... GPCAP DEFINITION DATASET CAPTURE...
(pip install duckdb)
"""
import json
import os
import re
import subprocess
import sys

import duckdb

argv, layer, more = sys.argv[1:], None, []
while argv and argv[0] in ("--layer", "--arg"):
    if argv[0] == "--layer":
        layer = argv[1]
    else:
        more.append(argv[1])
    argv = argv[2:]
gpcap, definition, dataset, captures = argv[0], argv[1], argv[2], argv[3:]
# Schema 5 (4's layout; lists as child tables): each capture's tables in its own directory, DATASET/capture=FILE/TABLE/
# (an inner layer's in DATASET/capture=FILE/layer=NAME/TABLE/). `capture=*` never matches
# the hidden staging directory of an export being written.
inner = f"layer={layer}/" if layer else ""


def glob(table):
    return f"{dataset}/capture=*/{inner}{table}/*.parquet"


db = duckdb.connect()
db.sql(f"""
create view packets as
select * from read_parquet('{glob("packets")}', hive_partitioning = true);
create macro endpoint(ip, port) as
  case when contains(ip, ':') then '[' || ip || ']:' || port else ip || ':' || port end;
""")
failures = 0
for capture in captures:
    name = label = os.path.basename(capture)
    report = json.loads(
        subprocess.run(
            [gpcap, "analyze", "--json", "-d", definition, *more, capture], check=True, capture_output=True
        ).stdout
    )
    if layer:
        label = f"{name}, layer {layer}"
        report = next(x for x in report["layers"] if x["name"] == layer)
    want_flows = {
        (f["src"], f["dst"]): (f["datagrams"], f["crc_mismatch"], [t for t in f["types"]]) for f in report["flows"]
    }
    got = {}
    for src, dst, datagrams, crc_mismatch in db.execute(
        """
        select endpoint(src_ip, src_port), endpoint(dst_ip, dst_port),
               count(*), count(*) filter (status = 'crc_mismatch')
        from packets where capture = ? and row = 'datagram' group by all
        """,
        [name],
    ).fetchall():
        got[(src, dst)] = [datagrams, crc_mismatch, [0] * len(report["flows"][0]["types"]) if report["flows"] else []]
    for src, dst, type_id, n in db.execute(
        """
        select endpoint(src_ip, src_port), endpoint(dst_ip, dst_port), type_id, count(*)
        from packets
        where capture = ? and row = 'datagram' and status in ('ok', 'malformed') and type_id is not null
        group by all
        """,
        [name],
    ).fetchall():
        got[(src, dst)][2][type_id] = n
    got = {k: (v[0], v[1], v[2]) for k, v in got.items()}
    # Per flow, every flow: the report's own rows leave out flows counted apart (fragments
    # of a flow the description does not fit), which the packets table still holds.
    want_rows = {}
    for f in report["flows"]:
        for n, cs in f["reassembly"].items():
            seen, completed = want_rows.get(int(n), (0, 0))
            want_rows[int(n)] = (seen + cs["seen"], completed + cs["completed"])
    want_rows = {n: v for n, v in want_rows.items() if v[0] or v[1]}
    got_rows = {
        n: (seen, completed)
        for n, seen, completed in db.execute(
            """
            select fragment_count, count(*) filter (opens), count(*) filter (completes is not null)
            from packets where capture = ? and fragment_count is not null group by all
            """,
            [name],
        ).fetchall()
        if seen or completed
    }
    # Fragments inside messages (KCP's count-down `frg`): `packets` has no fragment
    # columns for them, only the messages rebuilt (`row = 'reassembled'`): their number
    # must be the report's completed total.
    if not got_rows and want_rows:
        rebuilt = db.execute(
            "select count(*) from packets where capture = ? and row = 'reassembled'", [name]
        ).fetchall()[0][0]
        if rebuilt == sum(c for _, c in want_rows.values()):
            print(f"  {rebuilt} messages rebuilt from fragments inside messages: as analyze completed")
            got_rows = want_rows
    # Time as a data engineer queries it, without casts: packets per second by
    # date_trunc and by time_bucket agree with each other and with the row count.
    per_second = db.execute(
        """
        select count(distinct date_trunc('second', ts)), count(distinct time_bucket(interval 1 second, ts)),
               count(*), count(*) filter (epoch_us(ts) = ts_ns // 1000)
        from packets where capture = ?
        """,
        [name],
    ).fetchall()[0]
    time_ok = per_second[0] == per_second[1] and per_second[2] == per_second[3]
    if not time_ok:
        print(f"  ts: {per_second} (distinct seconds by date_trunc, by time_bucket; rows; rows whose ts is ts_ns)")
    # The join docs/export.md gives: every type table's row meets exactly one `packets` row
    # (a reassembled packet and the datagram that completed it share a frame: the key is
    # (capture, frame, reassembled); on (capture, frame) alone they double-count).
    join_ok = True
    here = os.path.join(dataset, f"capture={name}", inner)

    def columns_of(table):
        return [r[0] for r in db.execute(f"describe select * from read_parquet('{glob(table)}')").fetchall()]

    # A type's table has `reassembled` (a list's never: an element's field of that name is
    # renamed), so a type named `B__items` is not taken for a list's table.
    cols = {
        d: columns_of(d)
        for d in sorted(os.listdir(here))
        if d.startswith(("type_", "packets__")) and os.path.isdir(os.path.join(here, d))
    }
    types = [t for t in cols if t.startswith("type_") and "reassembled" in cols[t]]
    for table in types:
        rows, joined, keys = db.execute(
            f"""
            with t as (select * from read_parquet('{glob(table)}', hive_partitioning = true)
                       where capture = ?)
            select (select count(*) from t), count(*), (select count(distinct (frame, row)) from t)
            from t join packets p
              on p.capture = t.capture and p.frame = t.frame and (p.row = 'reassembled') = t.reassembled
            """,
            [name],
        ).fetchall()[0]
        # (frame, row) is the key its child tables join on: one row each.
        if not rows == joined == keys:
            join_ok = False
            print(f"  {table}: {rows} rows, {joined} joined with packets, {keys} distinct (frame, row)")
    # Child tables (schema 5: a list's elements, one row per element): each row meets
    # exactly one parent row, the parent's length column sums to the rows, and a packet
    # type's lists hold as many elements as `dissect --jsonl` shows.
    children = [t for t in cols if t not in types]
    children_ok = True
    if children:
        elements = {}
        out = subprocess.run(
            [gpcap, "dissect", "--jsonl", "-d", definition, *more, capture], check=True, capture_output=True, text=True
        ).stdout
        for line in out.splitlines():
            d = json.loads(line)
            if d["fragment"] is not None or d["packet_type"] is None or d["crc_ok"] is False:
                continue

            def walk(fields, prefix):
                for f in fields:
                    path = f["path"]
                    base, _, k = path.rpartition("[")
                    if prefix == "" and k.endswith("]") and k[:-1].isdigit() and "[" not in base:
                        key = (d["type_name"], base)
                        elements[key] = elements.get(key, 0) + 1
                    walk(f.get("fields") or [], "")

            walk(d["fields"], "")
    listed = {}
    elements_names = {n for _, n in elements} if children else set()
    for child in children:
        # The parent: the longest table whose name and `__` begin the child's (a type or
        # a list may have `__` in its name); the list's length column is the rest, less
        # a `_N` a colliding table name was given.
        parent = max((t for t in [*cols, "packets"] if child.startswith(t + "__")), key=len)
        last = child[len(parent) + 2 :]
        pcols = cols.get(parent) or columns_of("packets")
        if last.split(".")[0] not in pcols and re.sub(r"_\d+$", "", last).split(".")[0] in pcols:
            last = re.sub(r"_\d+$", "", last)
        keys = cols[child][: cols[child].index("index")]
        # A header's list: the datagram's row of `packets` (whose `row` is its kind).
        on = ["c.frame = p.frame", "p.row = 'datagram'" if parent == "packets" else "c.row = p.row"]
        if parent in children:
            # The parent's own place is the child's key named after the parent's list.
            above = keys[2:]
            on += [f"c.{k} = p.{k}" for k in above[:-1]] + [f"c.{above[-1]} = p.index"]
        rows, joined, length = db.execute(
            f"""
            with c as (select * from read_parquet('{glob(child)}', hive_partitioning = true) where capture = ?),
                 p as (select * from read_parquet('{glob(parent)}', hive_partitioning = true) where capture = ?)
            select (select count(*) from c),
                   (select count(*) from c join p on c.capture = p.capture and {" and ".join(on)}),
                   (select coalesce(sum(p.{last}), 0) from p)
            """,
            [name, name],
        ).fetchall()[0]
        if not (rows == joined == length):
            children_ok = False
            print(f"  {child}: {rows} rows, {joined} joined with {parent}, its lengths sum to {length}")
        if parent in types:
            # Lists of one name in two branches are `items` and `items_2` here, `items` in
            # dissect: their elements are counted together.
            key = (parent[len("type_"):], re.sub(r"_\d+$", "", last) if last not in elements_names else last)
            listed[key] = listed.get(key, 0) + rows
    for key, n in listed.items():
        if elements.get(key, 0) != n:
            children_ok = False
            print(f"  type {key[0]}, list {key[1]}: {n} elements in the dataset, {elements.get(key, 0)} in dissect")
    if children:
        print(f"  {len(children)} child tables: {'each row joins its parent, as many as dissect shows' if children_ok else 'DIFFERENT'}")
    # Message streams: per flow and stream, the verdicts of `stream_messages` counted as
    # analyze's `streams[].seq` and `stream_acks[].acks` count them.
    streams_ok = True
    if os.path.isdir(os.path.join(here, "stream_messages")):
        want = {}
        for f in report["flows"]:
            flow = (f["src"], f["dst"])
            for st in f.get("streams") or []:
                want.setdefault((*flow, st["name"], st["key"]), [0] * 6)[:2] = [st["seq"]["duplicates"], st["seq"]["late"]]
            for st in f.get("stream_acks") or []:
                a = st["acks"]
                w = want.setdefault((*flow, st["name"], st["key"]), [0] * 6)
                w[2:] = [a["retransmissions"], a["spurious_retransmissions"], a["naked"], a["never_acked"]]
        got_streams = {
            (src, dst, stream, key): list(v)
            for src, dst, stream, key, *v in db.execute(
                f"""
                select endpoint(src_ip, src_port), endpoint(dst_ip, dst_port), stream, key,
                       count(*) filter (verdict = 'dup'), count(*) filter (verdict = 'late'),
                       count(*) filter (retransmission), count(*) filter (spurious),
                       count(distinct sequence) filter (naked), count(distinct sequence) filter (acked = false)
                from read_parquet('{glob("stream_messages")}', hive_partitioning = true)
                where capture = ? group by all
                """,
                [name],
            ).fetchall()
        }
        streams_ok = got_streams == want
        print(f"  stream_messages: {len(got_streams)} streams, {'same as analyze --json' if streams_ok else 'DIFFERENT'}")
        if not streams_ok:
            for k in sorted(set(got_streams) | set(want)):
                if got_streams.get(k) != want.get(k):
                    print(f"  stream {k}: export {got_streams.get(k)} analyze {want.get(k)}")
    # Sums as a client reads them: cast to BIGINT (DuckDB sums any integer into HUGEINT).
    total = db.execute("select typeof(sum(size)::BIGINT) from packets where capture = ?", [name]).fetchall()[0][0]
    ok = got == want_flows and got_rows == want_rows and time_ok and join_ok and streams_ok and children_ok and total == "BIGINT"
    print(
        f"{label}: {len(got)} flows, {sum(v[0] for v in got.values())} datagrams, "
        f"{sum(v[1] for v in got.values())} CRC failures, "
        f"{sum(s for s, _ in got_rows.values())} fragmented packets seen, "
        f"{sum(c for _, c in got_rows.values())} completed: {'same as analyze --json' if ok else 'DIFFERENT'}"
    )
    if not ok:
        failures += 1
        for k in sorted(set(got) | set(want_flows)):
            if got.get(k) != want_flows.get(k):
                print(f"  flow {k}: export {got.get(k)} analyze {want_flows.get(k)}")
        if got_rows != want_rows:
            print(f"  reassembly: export {got_rows} analyze {want_rows}")
sys.exit(1 if failures else 0)
