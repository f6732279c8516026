//! MTU findings and fragment-loss amplification: what the sizes and the reassembly
//! say, and how sure a rate measured on a sample can be (Wilson intervals).

use super::*;

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct IcmpFinding {
    pub frame: u64,
    pub from: IpAddr,
    pub v6: bool,
    /// The MTU the router announced.
    pub mtu: u32,
    /// The flow of the quoted datagram.
    pub flow: Option<FlowId>,
    /// Size of the datagram that did not fit.
    pub quoted_ip_len: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct IpFragFinding {
    pub frame: u64,
    pub flow: FlowId,
    pub ip_len: u32,
    pub fragments: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct MtuReport {
    pub budget: u32,
    pub link_mtu: u32,
    /// Game datagrams whose UDP payload exceeds the budget.
    pub over_budget: u64,
    /// Game IP datagrams larger than the link MTU.
    pub over_link_mtu: u64,
    /// Of those, sent whole with don't-fragment.
    pub df_over_link_mtu: u64,
    /// Game datagrams that arrived IP-fragmented (and were reassembled).
    pub ip_fragmented: u64,
    /// Of those, datagrams no larger than `link_mtu`: fragmented on a path whose MTU is
    /// smaller than the link MTU assumed (see `fragment_mtu`).
    pub ip_fragmented_within_link_mtu: u64,
    /// The largest IP fragment that was not a datagram's last (any protocol): the MTU
    /// the senders fragmented at, or less. Null without IP fragments.
    pub fragment_mtu: Option<u32>,
    pub ip_fragmented_list: Vec<IpFragFinding>,
    /// IP-fragmented datagrams (any protocol) never reassembled.
    pub ip_never_reassembled: u64,
    pub fragments_over_size: u64,
    pub icmp_total: u64,
    pub icmp: Vec<IcmpFinding>,
    /// Don't-fragment datagrams larger than the MTU ICMP announced for their flow.
    pub df_over_path_mtu: u64,
    /// Sequence gaps (runs of lost sequences) on every flow.
    pub gaps: u64,
    /// Of those, gaps that follow an ICMP announcing that a datagram of the flow was over
    /// the path MTU (the datagram a router dropped).
    pub gaps_after_path_mtu: u64,
    pub bursts: BurstReport,
}

/// Sizes in the second before each loss burst against the rest.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct BurstReport {
    /// Gaps of two or more sequences.
    pub bursts: u64,
    pub before_count: u64,
    pub before_mean_size: f64,
    /// Share of datagrams over the budget in the second before a burst.
    pub before_over_budget: f64,
    pub rest_count: u64,
    pub rest_mean_size: f64,
    pub rest_over_budget: f64,
    pub finding: Option<BurstFinding>,
}

/// Oversize packets cluster before loss bursts: the share over the budget in the second
/// before a burst against the rest, each on at least `MIN_SAMPLE` datagrams with their
/// 95% intervals apart. Said in words by `present` (JSON carries the sentence).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BurstFinding {
    pub before_share: f64,
    pub before_count: u64,
    pub rest_share: f64,
    pub rest_count: u64,
}

/// Fragmented packets lost more often than single ones: from `from` fragments up,
/// `lost` of `seen` packets (95% interval `low`–`high`) against the baseline's `base` of
/// `base_n`. Said in words by `present` (JSON carries the sentence).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Amplification {
    pub from: u32,
    pub lost: u64,
    pub seen: u64,
    pub low: f64,
    pub high: f64,
    pub against: Baseline,
    pub base: f64,
    pub base_n: u64,
}

/// What fragmented packets' loss is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Baseline {
    /// Datagrams sent whole (sequence gaps of the flows `single_loss_scope` names).
    SingleDatagrams,
    /// Fragments on their own, when no datagram was sent whole.
    SingleFragments,
}

/// A finding the report states, or holds back when the fit puts its loss figures in
/// doubt (`Fit::suppressed`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Finding {
    Amplification(Amplification),
    Bursts(BurstFinding),
}

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CountRow {
    pub fragments: u32,
    pub seen: u64,
    pub completed: u64,
    pub lost: u64,
    pub observed_loss: f64,
    /// 95% Wilson interval of the observed loss.
    pub observed_low: f64,
    pub observed_high: f64,
    /// `1 - (1 - p)^n`.
    pub predicted_loss: f64,
    /// Observed loss over single-datagram loss on the same flows.
    pub amplification: Option<f64>,
    pub bytes_wasted: u64,
}

/// The flows whose single datagrams measure the loss fragments are compared with (JSON
/// keeps the words it always had; `present/` says them in tables).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum LossScope {
    /// Nothing was reassembled: no scope.
    #[default]
    #[serde(rename = "")]
    None,
    /// The fragmenting flows' own single packets.
    #[serde(rename = "same flows")]
    SameFlows,
    /// The flows that never fragment, when the fragmenting flows send nothing else.
    #[serde(rename = "flows that never fragment")]
    NeverFragmenting,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct ReassemblyReport {
    /// Packets reassembled from all their fragments.
    pub completed: u64,
    pub dissected_ok: u64,
    pub malformed: u64,
    #[serde(rename = "crc_mismatch")]
    pub crc_fail: u64,
    pub attacks: AttackCounters,
    #[serde(skip)]
    pub by_count: BTreeMap<u32, CountStats>,
    /// Messages of count-down or flagged fragments sent in one fragment: whole, not
    /// fragmented (with the completed ones, every message delivered).
    #[serde(skip_serializing_if = "is_zero")]
    pub single_fragment_messages: u64,
    pub packets_seen: u64,
    pub fragments_expected: u64,
    pub fragments_received: u64,
    /// Fragment loss rate p: missing fragments over expected.
    pub fragment_loss: f64,
    /// Loss of single (unfragmented) datagrams: sequence gaps over gaps plus sequences
    /// received whole, on the flows `single_loss_scope` names.
    pub single_loss: f64,
    pub single_lost: u64,
    pub single_total: u64,
    /// Which flows measured `single_loss`.
    pub single_loss_scope: LossScope,
    pub rows: Vec<CountRow>,
    pub bytes_wasted: u64,
    pub peak_bytes: u64,
    pub finding: Option<Amplification>,
    /// Fragmented packets of flows whose sequence or fragment fields do not fit and whose
    /// packets mostly never complete (an attacker's refused fragments, a wrong field):
    /// left out of the loss figures above.
    pub counted_apart: CountedApart,
}

impl MtuReport {
    /// Adds a shard's MTU findings, the lists kept in frame order.
    pub(in crate::sinks::analysis) fn merge(&mut self, n: MtuReport) {
        let m = self;
        m.over_budget += n.over_budget;
        m.over_link_mtu += n.over_link_mtu;
        m.df_over_link_mtu += n.df_over_link_mtu;
        m.ip_fragmented += n.ip_fragmented;
        m.ip_fragmented_within_link_mtu += n.ip_fragmented_within_link_mtu;
        m.fragment_mtu = m.fragment_mtu.max(n.fragment_mtu);
        merge_listed(&mut m.ip_fragmented_list, n.ip_fragmented_list, |x| x.frame, 1000);
        m.fragments_over_size += n.fragments_over_size;
        m.icmp_total += n.icmp_total;
        merge_listed(&mut m.icmp, n.icmp, |x| x.frame, 1000);
        m.df_over_path_mtu += n.df_over_path_mtu;
        m.gaps += n.gaps;
        m.gaps_after_path_mtu += n.gaps_after_path_mtu;
    }
}

/// Wilson score interval for `k` successes in `n` trials at 95%.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_985_f64;
    let n = n as f64;
    let p = k as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// `1 - (1 - p)^n`: the chance a packet of `n` fragments loses at least one.
pub fn predicted_loss(p: f64, n: u32) -> f64 {
    1.0 - (1.0 - p).powi(n as i32)
}

/// A finding rests on at least this many packets on each side of the comparison.
pub const MIN_SAMPLE: u64 = 20;

/// The plain-language finding, when fragmented packets are lost more than single ones:
/// from the smallest fragment count whose packets (that count and more) are lost at
/// least twice as often as the baseline, on at least `MIN_SAMPLE` packets of each, with
/// the group's 95% Wilson interval above the baseline's.
pub(in crate::sinks::analysis) fn amplification_finding(r: &ReassemblyReport) -> Option<Amplification> {
    let lost: u64 = r.rows.iter().map(|x| x.lost).sum();
    if r.packets_seen == 0 || lost == 0 {
        return None;
    }
    let (base, base_n, base_k, against) = if r.single_loss > 0.0 {
        (
            r.single_loss,
            r.single_total,
            r.single_lost,
            Baseline::SingleDatagrams,
        )
    } else {
        let missing = r.fragments_expected.saturating_sub(r.fragments_received);
        (
            r.fragment_loss,
            r.fragments_expected,
            missing,
            Baseline::SingleFragments,
        )
    };
    if base <= 0.0 || base_n < MIN_SAMPLE {
        return None;
    }
    let (_, base_high) = wilson(base_k, base_n);
    let (from, seen, lost) = r.rows.iter().find_map(|x| {
        let (seen, lost) = r
            .rows
            .iter()
            .filter(|y| y.fragments >= x.fragments)
            .fold((0, 0), |(s, l), y| (s + y.seen, l + y.lost));
        let observed = lost as f64 / seen.max(1) as f64;
        let (low, _) = wilson(lost, seen);
        (seen >= MIN_SAMPLE && observed >= 2.0 * base && low > base_high).then_some((x.fragments, seen, lost))
    })?;
    let (low, high) = wilson(lost, seen);
    Some(Amplification {
        from,
        lost,
        seen,
        low,
        high,
        against,
        base,
        base_n,
    })
}

impl ReassemblyReport {
    /// The totals over fragment counts, the baseline single-datagram loss (`single`:
    /// lost, of, on which flows), and one row per fragment count.
    pub(in crate::sinks::analysis) fn add_up(&mut self, single: (u64, u64, LossScope)) {
        let r = self;
        r.by_count.retain(|_, s| s.seen > 0);
        for (&n, s) in &r.by_count {
            r.packets_seen += s.seen;
            r.fragments_expected += n as u64 * s.seen;
            r.fragments_received += n as u64 * s.completed + s.fragments_of_lost;
            r.bytes_wasted += s.bytes_wasted;
        }
        r.fragment_loss = if r.fragments_expected > 0 {
            r.fragments_expected.saturating_sub(r.fragments_received) as f64 / r.fragments_expected as f64
        } else {
            0.0
        };
        let (seq_lost, seq_total, scope) = single;
        r.single_lost = seq_lost;
        r.single_total = seq_total;
        r.single_loss = if seq_total > 0 {
            seq_lost as f64 / seq_total as f64
        } else {
            0.0
        };
        r.single_loss_scope = scope;
        let p = r.fragment_loss;
        r.rows = r
            .by_count
            .iter()
            .map(|(&n, s)| {
                let lost = s.lost();
                let observed = if s.seen > 0 {
                    lost as f64 / s.seen as f64
                } else {
                    0.0
                };
                let (lo, hi) = wilson(lost, s.seen);
                CountRow {
                    fragments: n,
                    seen: s.seen,
                    completed: s.completed,
                    lost,
                    observed_loss: observed,
                    observed_low: lo,
                    observed_high: hi,
                    predicted_loss: predicted_loss(p, n),
                    // From fewer packets than a finding needs, a ratio says nothing (one
                    // lost packet of one made 50×).
                    amplification: (r.single_loss > 0.0 && s.seen >= MIN_SAMPLE)
                        .then(|| observed / r.single_loss),
                    bytes_wasted: s.bytes_wasted,
                }
            })
            .collect();
    }
}
