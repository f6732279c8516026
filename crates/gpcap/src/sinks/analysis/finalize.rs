//! The report's derived figures, in steps, once every counter is in (after shards are
//! merged): each conversation's client, the flows' rates and sizes, the packets counted
//! apart, the amplification finding, and the fit, which holds back what rests on a
//! doubtful figure.

use super::fit;
use super::report::*;
use gpcap_engine::Config;
use std::net::SocketAddr;

impl Report {
    /// Decides which end of each conversation is the client from the packet types the
    /// definition declares `from=client` or `from=server`, over both directions; packets
    /// against that decision are counted as wrong-direction. A tie decides nothing.
    fn directions(&mut self) {
        use gpcap_dissect::program::Side;
        let index: std::collections::HashMap<(SocketAddr, SocketAddr), usize> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.src, f.dst), i))
            .collect();
        let mut total = 0;
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            let back = index.get(&(f.dst, f.src)).map(|&j| &self.flows[j]);
            let (back_client, back_server) = back.map_or((0, 0), |b| (b.from_client, b.from_server));
            // Votes for "this flow's source is the client", and for "it is the server".
            let client = f.from_client + back_server;
            let server = f.from_server + back_client;
            let (role, wrong) = match client.cmp(&server) {
                std::cmp::Ordering::Greater => (Some(Side::Client), f.from_server),
                std::cmp::Ordering::Less => (Some(Side::Server), f.from_client),
                std::cmp::Ordering::Equal => (None, 0),
            };
            let f = &mut self.flows[i];
            f.role = role;
            f.wrong_direction = wrong;
            total += wrong;
        }
        self.validation.wrong_direction = total;
    }

    pub(crate) fn finalize(&mut self, cfg: &Config) {
        self.schema = SCHEMA_VERSION;
        self.timeline.trim();
        let c = &mut self.capture;
        if let (Some(a), Some(b)) = (c.first_ns, c.last_ns) {
            c.duration_s = b.saturating_sub(a) as f64 / 1e9;
        }
        self.mtu.ip_never_reassembled = c.ip_defrag.incomplete;
        if let Some(p) = &cfg.program {
            self.type_names = (0..p.params.format.num_types)
                .map(|t| p.type_name(t).map(str::to_string))
                .collect();
            if let Some(m) = &mut self.messages {
                m.finalize(p);
            }
        }
        self.directions();
        let single = self.flow_rates();
        self.count_apart(cfg.sequence_bits());
        let r = &mut self.reassembly;
        r.add_up(single);
        r.finding = amplification_finding(r);
        self.judge_fit(cfg.sequence_bits());
    }

    /// Each flow's duration, rates and size percentiles; returns the single-datagram
    /// loss from sequence gaps (lost, of, on which flows).
    fn flow_rates(&mut self) -> (u64, u64, LossScope) {
        // Single-datagram loss from sequence gaps: on the fragmenting flows when they also
        // send whole packets, else on the flows that never fragment.
        let mut same = (0u64, 0u64);
        let mut other = (0u64, 0u64);
        for f in &mut self.flows {
            if let (Some(a), Some(b)) = (f.first_ns, f.last_ns) {
                f.duration_s = b.saturating_sub(a).max(0) as f64 / 1e9;
            }
            if f.duration_s > 0.0 {
                f.packets_per_s = f.datagrams as f64 / f.duration_s;
                f.bits_per_s = f.bytes as f64 * 8.0 / f.duration_s;
            }
            f.sizes = Percentiles {
                p50: f.size_hist.quantile(0.50),
                p95: f.size_hist.quantile(0.95),
                p99: f.size_hist.quantile(0.99),
                max: f.size_hist.max,
            };
            // A gap is counted as a lost single datagram: a packet whose every fragment
            // was lost leaves the same gap and cannot be told apart.
            let gaps = (f.seq.lost, f.seq.lost + f.seq.single);
            if f.fragments > 0 && f.crc_ok > f.fragments {
                same = (same.0 + gaps.0, same.1 + gaps.1);
            } else if f.fragments == 0 && f.crc_ok > 0 {
                other = (other.0 + gaps.0, other.1 + gaps.1);
            }
        }
        if same.1 > 0 {
            (same.0, same.1, LossScope::SameFlows)
        } else {
            (other.0, other.1, LossScope::NeverFragmenting)
        }
    }

    /// Takes the fragmented packets of flows that do not fit (`seq_bits` wide
    /// sequences) out of the amplification table, into `counted_apart`.
    fn count_apart(&mut self, seq_bits: u32) {
        // Flows whose sequence or fragment fields do not fit are counted apart: their
        // "lost" packets are refused fragments or misread fields, not loss.
        let r = &mut self.reassembly;
        for f in &self.flows {
            // Only where the packets mostly never complete: a filtered capture's flows
            // skip sequences, but their fragments still join.
            if !fit::counted_apart(f, seq_bits) {
                continue;
            }
            let apart = &mut r.counted_apart;
            apart.flows += 1;
            for (n, cs) in &f.reassembly {
                apart.packets += cs.seen;
                apart.fragments_received += *n as u64 * cs.completed + cs.fragments_of_lost;
                if let Some(all) = r.by_count.get_mut(n) {
                    all.seen = all.seen.saturating_sub(cs.seen);
                    all.completed = all.completed.saturating_sub(cs.completed);
                    all.fragments_of_lost = all.fragments_of_lost.saturating_sub(cs.fragments_of_lost);
                    all.bytes_wasted = all.bytes_wasted.saturating_sub(cs.bytes_wasted);
                }
            }
        }
    }

    /// Judges the fit and holds back the findings built on loss when it is not good.
    fn judge_fit(&mut self, seq_bits: u32) {
        self.fit = Fit::of(self, seq_bits);
        if self.fit.is_good() {
            return;
        }
        if let Some(f) = self.reassembly.finding.take() {
            self.fit.suppressed.push(Finding::Amplification(f));
        }
        if let Some(f) = self.mtu.bursts.finding.take() {
            self.fit.suppressed.push(Finding::Bursts(f));
        }
    }
}
