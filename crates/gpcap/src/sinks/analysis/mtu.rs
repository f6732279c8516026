//! The MTU section as a tap of its own, as Wireshark has one tap per statistic: what
//! ICMP said of each path, the datagrams over the budget, the link's MTU or a path's,
//! IP fragmentation, oversize fragments and the sequence gaps it is to blame for. It
//! counts as packets come, merges across shards and closes into the report's `mtu`
//! once, at the end; nothing else writes that section.

use super::report::{BurstReport, FlowStats, IcmpFinding, IpFragFinding, MtuReport};
use super::{Config, MAX_LISTED};
use gpcap_engine::PacketEvent;
use gpcap_wire::decode::{FlowId, IcmpTooBig, IpInfo};
use hashbrown::{HashMap, HashSet};
use std::net::SocketAddr;

#[derive(Clone)]
pub(super) struct MtuTap {
    link_mtu: u32,
    /// The smallest MTU ICMP announced for each flow.
    path_mtu: HashMap<(SocketAddr, SocketAddr), u32>,
    /// Flows an ICMP said a datagram was dropped from (over the path MTU), until their
    /// next datagram: a gap it shows is the dropped datagram's.
    dropped_over_mtu: HashSet<(SocketAddr, SocketAddr)>,
    counts: MtuReport,
}

impl MtuTap {
    pub(super) fn new(cfg: &Config) -> Self {
        MtuTap {
            link_mtu: cfg.link_mtu,
            path_mtu: HashMap::new(),
            dropped_over_mtu: HashSet::new(),
            counts: MtuReport {
                budget: cfg.format.mtu_budget,
                link_mtu: cfg.link_mtu,
                ..MtuReport::default()
            },
        }
    }

    /// A game datagram of flow `key`: over the budget, the link's MTU or a path's,
    /// fragmented by IP (counted for its flow in `s` too).
    #[inline(always)]
    pub(super) fn datagram(&mut self, s: &mut FlowStats, e: &PacketEvent, ip: &IpInfo, key: &FlowId) {
        let m = &mut self.counts;
        if e.over_budget {
            s.over_budget += 1;
            m.over_budget += 1;
        }
        let whole = e.ip_fragments <= 1;
        if ip.total_len > self.link_mtu {
            m.over_link_mtu += 1;
            if ip.dont_fragment && whole {
                m.df_over_link_mtu += 1;
            }
        }
        // A datagram sent whole with don't-fragment over the MTU a router announced (the
        // first one is counted from the ICMP that quotes it).
        if ip.dont_fragment
            && whole
            && !self.path_mtu.is_empty()
            && let Some(&pmtu) = self.path_mtu.get(&(key.src, key.dst))
            && ip.total_len > pmtu
        {
            m.df_over_path_mtu += 1;
        }
        if whole {
            return;
        }
        s.ip_fragmented += 1;
        m.ip_fragmented += 1;
        if ip.total_len <= self.link_mtu {
            m.ip_fragmented_within_link_mtu += 1;
        }
        if m.ip_fragmented_list.len() < MAX_LISTED {
            m.ip_fragmented_list.push(IpFragFinding {
                frame: e.frame,
                flow: *key,
                ip_len: ip.total_len,
                fragments: e.ip_fragments,
            });
        }
    }

    /// A piece of an IP-fragmented datagram: one before the last is as large as the
    /// sender's MTU let it be.
    pub(super) fn ip_piece(&mut self, ip: &IpInfo) {
        if ip.more_fragments {
            let m = &mut self.counts;
            m.fragment_mtu = m.fragment_mtu.max(Some(ip.total_len));
        }
    }

    /// ICMP "fragmentation needed" or "packet too big" in frame `frame`.
    pub(super) fn icmp(&mut self, frame: u64, icmp: IcmpTooBig) {
        if let Some(q) = icmp.quoted {
            // Later datagrams are counted as they arrive; the first ICMP of a flow stands
            // for the datagram before it.
            let first = !self.path_mtu.contains_key(&(q.src, q.dst));
            let mtu = self.path_mtu.entry((q.src, q.dst)).or_insert(icmp.mtu);
            *mtu = (*mtu).min(icmp.mtu);
            if first && q.ip_len > icmp.mtu {
                self.counts.df_over_path_mtu += 1;
            }
            if q.ip_len > icmp.mtu {
                self.dropped_over_mtu.insert((q.src, q.dst));
            }
        }
        let m = &mut self.counts;
        m.icmp_total += 1;
        if m.icmp.len() < MAX_LISTED {
            m.icmp.push(IcmpFinding {
                frame,
                from: icmp.from,
                v6: icmp.v6,
                mtu: icmp.mtu,
                flow: icmp.quoted.map(|q| FlowId {
                    src: q.src,
                    dst: q.dst,
                }),
                quoted_ip_len: icmp.quoted.map(|q| q.ip_len),
            });
        }
    }

    /// A new sequence on flow `key`, `gap` after the one before: a gap right after an
    /// ICMP said a datagram of the flow was dropped is the MTU's.
    #[inline(always)]
    pub(super) fn new_sequence(&mut self, key: &FlowId, gap: u32) {
        let dropped = !self.dropped_over_mtu.is_empty() && self.dropped_over_mtu.remove(&(key.src, key.dst));
        if gap > 0 {
            self.counts.gaps += 1;
            self.counts.gaps_after_path_mtu += dropped as u64;
        }
    }

    /// A game fragment whose data is over the definition's fragment size.
    pub(super) fn oversize_fragment(&mut self) {
        self.counts.fragments_over_size += 1;
    }

    /// Folds in a shard's tap (flows of other address pairs).
    pub(super) fn merge(&mut self, o: MtuTap) {
        self.path_mtu.extend(o.path_mtu);
        self.dropped_over_mtu.extend(o.dropped_over_mtu);
        self.counts.merge(o.counts);
    }

    /// The section, with the sizes seen before bursts of loss.
    pub(super) fn finish(self, bursts: BurstReport) -> MtuReport {
        MtuReport {
            bursts,
            ..self.counts
        }
    }
}
