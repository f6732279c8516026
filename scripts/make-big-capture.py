#!/usr/bin/env python3
"""Repeats the records of a pcap N times with shifted timestamps (until the generator
writes large captures itself). Usage: make-big-capture.py IN.pcap OUT.pcap N"""
import struct, sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, 'rb').read()
header, body = data[:24], data[24:]
recs = []
o = 0
while o + 16 <= len(body):
    ts, us, cap, orig = struct.unpack('<IIII', body[o:o + 16])
    recs.append((ts, us, body[o + 16:o + 16 + cap], orig))
    o += 16 + cap
span = recs[-1][0] - recs[0][0] + 1
with open(dst, 'wb') as out:
    out.write(header)
    for k in range(n):
        for ts, us, payload, orig in recs:
            out.write(struct.pack('<IIII', ts + k * span, us, len(payload), orig))
            out.write(payload)
