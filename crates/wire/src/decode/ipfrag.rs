//! IP-level reassembly (IPv4 MF/offset, IPv6 fragment header) with bounded memory and a
//! timeout, so the UDP payload of a datagram split by IP can still be analyzed.

use super::link::IpInfo;
use hashbrown::HashMap;
use std::net::IpAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    id: u32,
    protocol: u8,
}

#[derive(Clone)]
struct Entry {
    first_ns: i64,
    data: Vec<u8>,
    /// Received byte ranges: sorted, disjoint, merged where they touch.
    ranges: Vec<(u32, u32)>,
    total: Option<u32>,
    fragments: u32,
    first: Option<IpInfo>,
}

/// A datagram put back together.
#[derive(Debug, Clone)]
pub struct Reassembled {
    /// Header of the first fragment, with `total_len` of the whole datagram.
    pub ip: IpInfo,
    pub protocol: u8,
    pub data: Vec<u8>,
    pub fragments: u32,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DefragStats {
    pub fragments: u64,
    pub reassembled: u64,
    /// Datagrams whose fragments never all arrived (timed out, evicted, or left at the end).
    pub incomplete: u64,
    /// Fragments that overlapped or went past 64 KiB.
    pub bad_fragments: u64,
}

impl DefragStats {
    pub fn add(&mut self, o: &DefragStats) {
        self.fragments += o.fragments;
        self.reassembled += o.reassembled;
        self.incomplete += o.incomplete;
        self.bad_fragments += o.bad_fragments;
    }
}

#[derive(Clone)]
pub struct IpDefrag {
    entries: HashMap<Key, Entry>,
    pub max_entries: usize,
    pub timeout_ns: i64,
    pub stats: DefragStats,
}

const MAX_DATAGRAM: u32 = 65_535;

impl Default for IpDefrag {
    fn default() -> Self {
        IpDefrag {
            entries: HashMap::new(),
            max_entries: 256,
            timeout_ns: 30_000_000_000,
            stats: DefragStats::default(),
        }
    }
}

impl IpDefrag {
    /// Adds one fragment; returns the datagram when it is complete.
    pub fn push(&mut self, ts_ns: i64, ip: &IpInfo, protocol: u8, payload: &[u8]) -> Option<Reassembled> {
        self.stats.fragments += 1;
        let key = Key {
            src: ip.src,
            dst: ip.dst,
            id: ip.id,
            protocol,
        };
        let start = ip.frag_offset;
        let end = start.saturating_add(payload.len() as u32);
        if end > MAX_DATAGRAM {
            self.stats.bad_fragments += 1;
            return None;
        }
        if !self.entries.contains_key(&key) && self.entries.len() >= self.max_entries {
            self.expire(ts_ns);
            if self.entries.len() >= self.max_entries {
                // Still full: evict the oldest.
                if let Some(old) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, e)| e.first_ns)
                    .map(|(k, _)| *k)
                {
                    self.entries.remove(&old);
                    self.stats.incomplete += 1;
                }
            }
        }
        let e = self.entries.entry(key).or_insert_with(|| Entry {
            first_ns: ts_ns,
            data: Vec::new(),
            ranges: Vec::new(),
            total: None,
            fragments: 0,
            first: None,
        });
        // Ranges are kept sorted, disjoint and merged where they touch, so one binary
        // search finds an overlap and in-order pieces cost O(1): a datagram of 8000 tiny
        // fragments is not quadratic.
        let i = e.ranges.partition_point(|&(a, _)| a < end);
        if i > 0 && e.ranges[i - 1].1 > start {
            self.stats.bad_fragments += 1;
            return None;
        }
        if e.data.len() < end as usize {
            e.data.resize(end as usize, 0);
        }
        e.data[start as usize..end as usize].copy_from_slice(payload);
        let left = i > 0 && e.ranges[i - 1].1 == start;
        let right = e.ranges.get(i).is_some_and(|r| r.0 == end);
        match (left, right) {
            (true, true) => {
                e.ranges[i - 1].1 = e.ranges[i].1;
                e.ranges.remove(i);
            }
            (true, false) => e.ranges[i - 1].1 = end,
            (false, true) => e.ranges[i].0 = start,
            (false, false) => e.ranges.insert(i, (start, end)),
        }
        e.fragments += 1;
        if !ip.more_fragments {
            e.total = Some(end);
        }
        if start == 0 {
            e.first = Some(*ip);
        }
        let covered = match e.ranges.as_slice() {
            [(0, b)] => Some(*b),
            _ => None,
        };
        match (e.total, covered, e.first) {
            (Some(t), Some(c), Some(first)) if c == t => {
                let e = self.entries.remove(&key)?;
                self.stats.reassembled += 1;
                let mut ip = first;
                ip.total_len = first.header_len + t;
                ip.more_fragments = false;
                Some(Reassembled {
                    ip,
                    protocol,
                    data: e.data,
                    fragments: e.fragments,
                })
            }
            _ => None,
        }
    }

    /// Drops datagrams older than the timeout.
    pub fn expire(&mut self, now_ns: i64) {
        let before = self.entries.len();
        let timeout = self.timeout_ns;
        self.entries
            .retain(|_, e| now_ns.saturating_sub(e.first_ns) <= timeout);
        self.stats.incomplete += (before - self.entries.len()) as u64;
    }

    /// At the end of the capture: whatever is left never completed.
    pub fn finish(&mut self) {
        self.stats.incomplete += self.entries.len() as u64;
        self.entries.clear();
    }

    pub fn pending(&self) -> usize {
        self.entries.len()
    }
}
