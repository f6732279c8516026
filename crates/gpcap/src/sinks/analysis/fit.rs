//! How well the description (definition or reference layout) fits the traffic: the
//! share of datagrams that fail the header, the body or leave trailing bytes, and the
//! signs of a wrong sequence or fragment field. A report whose fit is not good says so
//! and holds back the findings built on the doubtful figures.
//!
//! Computed from the finished counters only, so shards and pipelined runs, whose
//! counters add up (`Report::merge`), give the same fit as one core.

pub use super::report::{Analyses, Failing, FirstFailure, Fit, FitNote, FlowFit, Sign, Verdict};
use super::report::{FlowStats, Report};

/// Thresholds (README, *Fit*): a share at or over the first is doubtful, over the
/// second does not fit; a sign needs `MIN` datagrams showing it.
const HEADER: (f64, f64) = (0.01, 0.10);
const BODY: (f64, f64) = (0.10, 0.50);
const TRAILING: (f64, f64) = (0.02, 0.25);
const MIN: u64 = 2;

fn share_verdict(n: u64, of: u64, (doubt, bad): (f64, f64)) -> Verdict {
    if n < MIN || of == 0 {
        return Verdict::Good;
    }
    let s = n as f64 / of as f64;
    if s >= bad {
        Verdict::DoesNotFit
    } else if s >= doubt {
        Verdict::Doubtful
    } else {
        Verdict::Good
    }
}

/// The fit of one flow's sequence and fragment fields.
pub(crate) fn flow_fit(f: &FlowStats, seq_bits: u32) -> Option<FlowFit> {
    let mut verdict = Verdict::Good;
    let mut why = Vec::new();
    let mut sign = |v: Verdict, s: Sign| {
        verdict = verdict.max(v);
        why.push(s);
    };
    let s = &f.seq;
    if s.lost > f.datagrams || (s.lost >= 10 && s.lost > s.received) {
        let v = if s.lost >= 10 && s.lost > s.received {
            Verdict::DoesNotFit
        } else {
            Verdict::Doubtful
        };
        sign(
            v,
            Sign::SeqLost {
                lost: s.lost,
                received: s.received,
            },
        );
    }
    if f.seq_jumps > 0 {
        let v = if f.seq_jumps >= MIN && f.seq_jumps * 20 >= s.received {
            Verdict::DoesNotFit
        } else {
            Verdict::Doubtful
        };
        sign(
            v,
            Sign::SeqJumps {
                bits: seq_bits,
                jumps: f.seq_jumps,
            },
        );
    }
    if s.received >= 10 && s.late * 5 >= s.received {
        let v = if s.late * 2 >= s.received {
            Verdict::DoesNotFit
        } else {
            Verdict::Doubtful
        };
        sign(
            v,
            Sign::SeqLate {
                late: s.late,
                received: s.received,
            },
        );
    }
    let (groups, completed, received) =
        f.reassembly
            .iter()
            .filter(|(n, _)| **n >= 2)
            .fold((0u64, 0u64, 0u64), |(g, c, r), (n, cs)| {
                (
                    g + cs.seen,
                    c + cs.completed,
                    r + cs.completed * *n as u64 + cs.fragments_of_lost,
                )
            });
    if let Some((v, why)) = refused_fragments(f) {
        sign(v, why);
    }
    if f.fragments >= 6 && groups >= 3 && completed == 0 && received * 2 < groups * 3 {
        sign(
            Verdict::DoesNotFit,
            Sign::NeverSharedGroup {
                fragments: f.fragments,
                groups,
            },
        );
    }
    (verdict > Verdict::Good).then(|| FlowFit {
        flow: f.id(),
        datagrams: f.datagrams,
        verdict,
        rests_on: why,
    })
}

/// Whether a flow's fragmented packets are counted apart from the loss figures: its
/// fields do not fit and its packets mostly never complete (a filtered capture's flows
/// skip sequences, but their fragments still join).
pub(crate) fn counted_apart(f: &FlowStats, seq_bits: u32) -> bool {
    let (seen, completed) = (f.reassembly.values()).fold((0, 0), |(s, c), x| (s + x.seen, c + x.completed));
    seen > 0
        && completed * 2 < seen
        && flow_fit(f, seq_bits).is_some_and(|x| x.verdict == Verdict::DoesNotFit)
}

/// Fragments refused because their number or count disagree (a count that changes, an
/// id past its count, a count out of range) dominating the messages of several
/// fragments completed: the fields are likely not what the definition says (a count
/// derived from a field that counts down).
fn refused_fragments(f: &FlowStats) -> Option<(Verdict, Sign)> {
    let a = &f.attacks;
    let refused = a.count_changed + a.id_out_of_range + a.count_out_of_range;
    let (seen, completed) = (f.reassembly.iter())
        .filter(|(n, _)| **n >= 2)
        .fold((0u64, 0u64), |(s, c), (_, cs)| (s + cs.seen, c + cs.completed));
    if refused < 10 || refused <= completed {
        return None;
    }
    let v = if completed * 10 <= refused {
        Verdict::DoesNotFit
    } else {
        Verdict::Doubtful
    };
    Some((
        v,
        Sign::RefusedFragments {
            refused,
            count_changed: a.count_changed,
            id_out_of_range: a.id_out_of_range,
            count_out_of_range: a.count_out_of_range,
            completed,
            seen,
        },
    ))
}

/// The ack analysis of one direction: never-acked far beyond what either direction's
/// own losses allow, or acks naming sequences never sent (an ack field that is not the
/// sequence it claims). `reverse`: the other direction's flow.
fn ack_fit(f: &FlowStats, reverse: Option<&FlowStats>) -> Option<(Verdict, Sign)> {
    let a = f.acks.as_ref()?;
    let loss = |x: &FlowStats| {
        let (l, r) = if x.streams.is_empty() {
            (x.seq.lost, x.seq.received)
        } else {
            (x.streams.iter()).fold((0, 0), |(l, r), s| (l + s.seq.lost, r + s.seq.received))
        };
        if l + r == 0 {
            0.0
        } else {
            l as f64 / (l + r) as f64
        }
    };
    let captured = loss(f).max(reverse.map_or(0.0, loss));
    let plausible = 2.0 * captured + 0.05;
    let flow = f.id();
    if a.never_acked >= 10 && a.ack_implied_loss > plausible {
        let v = if a.ack_implied_loss >= 0.5 {
            Verdict::DoesNotFit
        } else {
            Verdict::Doubtful
        };
        return Some((
            v,
            Sign::NeverAcked {
                flow,
                never_acked: a.ack_implied_loss,
                captured_loss: captured,
            },
        ));
    }
    let unsent = a.acks_of_unsent + a.naks_of_unsent;
    if unsent >= 10 && unsent * 10 >= a.acked {
        let v = if a.acked == 0 {
            Verdict::DoesNotFit
        } else {
            Verdict::Doubtful
        };
        return Some((
            v,
            Sign::AcksOfUnsent {
                flow,
                unsent,
                acked: a.acked,
            },
        ));
    }
    None
}

/// A message stream read as the flows' sequences are: more lost than received, or much
/// of it late.
fn stream_fit(f: &FlowStats) -> Option<(Verdict, Sign)> {
    for s in &f.streams {
        let q = &s.seq;
        if q.lost >= 10 && q.lost > q.received {
            return Some((
                Verdict::DoesNotFit,
                Sign::StreamLost {
                    name: s.name.clone(),
                    key: s.key.clone(),
                    flow: f.id(),
                    lost: q.lost,
                    received: q.received,
                },
            ));
        }
        if q.received >= 10 && q.late * 5 >= q.received {
            let v = if q.late * 2 >= q.received {
                Verdict::DoesNotFit
            } else {
                Verdict::Doubtful
            };
            return Some((
                v,
                Sign::StreamLate {
                    name: s.name.clone(),
                    key: s.key.clone(),
                    flow: f.id(),
                    late: q.late,
                    received: q.received,
                },
            ));
        }
    }
    None
}

impl Fit {
    /// Judges a finished report's counters.
    pub fn of(r: &Report, seq_bits: u32) -> Fit {
        let v = &r.validation;
        let datagrams = v.crc_ok;
        let header_errors: u64 = v.header_errors.values().sum();
        let trailing = r.flows.iter().map(|f| f.trailing).sum::<u64>();
        let body_errors = r
            .flows
            .iter()
            .map(|f| f.malformed.saturating_sub(f.header_errors + f.trailing))
            .sum::<u64>();
        let mut fit = Fit {
            datagrams,
            header_errors,
            body_errors,
            trailing_bytes: trailing,
            first_failure: r.first_failure.clone(),
            ..Fit::default()
        };
        if datagrams == 0 {
            fit.verdict = Verdict::NothingJudged;
            fit.rests_on.push(nothing_judged(r));
            return fit;
        }
        for (n, what, limits) in [
            (header_errors, Failing::Header, HEADER),
            (body_errors, Failing::Body, BODY),
            (trailing, Failing::Trailing, TRAILING),
        ] {
            let verdict = share_verdict(n, datagrams, limits);
            if verdict > Verdict::Good {
                fit.verdict = fit.verdict.max(verdict);
                fit.rests_on.push(Sign::Share { n, datagrams, what });
            }
        }
        fit.flows = r.flows.iter().filter_map(|f| flow_fit(f, seq_bits)).collect();
        if !fit.flows.is_empty() {
            let game: u64 = r.flows.iter().filter(|f| f.is_game()).map(|f| f.datagrams).sum();
            let bad: u64 = fit
                .flows
                .iter()
                .filter(|f| f.verdict == Verdict::DoesNotFit)
                .map(|f| f.datagrams)
                .sum();
            let verdict = if bad * 2 >= game && bad > 0 {
                Verdict::DoesNotFit
            } else {
                Verdict::Doubtful
            };
            fit.verdict = fit.verdict.max(verdict);
            fit.rests_on.push(Sign::FlowsDoNotRead {
                flows: fit.flows.len() as u64,
                game_flows: r.flows.iter().filter(|f| f.is_game()).count() as u64,
                datagrams: fit.flows.iter().map(|f| f.datagrams).sum::<u64>(),
                game_datagrams: game,
            });
        }
        fit.judge_analyses(r, seq_bits);
        // No definition: the header was read with the reference layout.
        if fit.verdict == Verdict::DoesNotFit && r.protocol.name.is_none() {
            fit.note = Some(FitNote::ReferenceMisfit {
                header_errors,
                datagrams,
            });
        }
        fit
    }

    /// Each analysis' fit, said in `rests_on` and counted in the verdict: fragments
    /// refused while few complete, acks the traffic's losses cannot explain, streams
    /// read as flows are.
    fn judge_analyses(&mut self, r: &Report, seq_bits: u32) {
        let mut fragments = Verdict::Good;
        // Flows counted apart are out of the loss figures already.
        for f in r.flows.iter().filter(|f| !counted_apart(f, seq_bits)) {
            if let Some((v, _)) = refused_fragments(f) {
                fragments = fragments.max(v);
            }
            let never_shared = flow_fit(f, seq_bits)
                .is_some_and(|x| (x.rests_on.iter()).any(|w| matches!(w, Sign::NeverSharedGroup { .. })));
            if never_shared {
                fragments = fragments.max(Verdict::DoesNotFit);
            }
        }
        let mut signs: Vec<(Verdict, Sign)> = Vec::new();
        let (mut acks, mut streams) = (Verdict::Good, Verdict::Good);
        for f in &r.flows {
            let reverse = r.flows.iter().find(|g| g.src == f.dst && g.dst == f.src);
            if let Some(s) = ack_fit(f, reverse) {
                acks = acks.max(s.0);
                signs.push(s);
            }
            if let Some(s) = stream_fit(f) {
                streams = streams.max(s.0);
                signs.push(s);
            }
        }
        self.analyses = Analyses {
            fragments,
            acks,
            streams,
        };
        for (v, why) in signs.into_iter().take(20) {
            self.verdict = self.verdict.max(v);
            self.rests_on.push(why);
        }
    }

    /// Whether figures of loss (and what is built on them) can be trusted.
    pub fn is_good(&self) -> bool {
        self.verdict == Verdict::Good
    }

    /// The warning printed above a table whose figures rest on the fit (none when nothing
    /// was judged: such tables are empty, and the Fit line says why).
    pub fn warning(&self, what: &str) -> Option<String> {
        (!self.is_good() && self.verdict != Verdict::NothingJudged).then(|| {
            format!(
                "(fit {}: {what} rest on fields that may not be the traffic's — see Fit)",
                self.verdict.as_str()
            )
        })
    }
}

/// Why no datagram was judged: no UDP at all, none on the protocol's ports, or none of
/// those passed the checksum.
fn nothing_judged(r: &Report) -> Sign {
    let (c, v) = (&r.capture, &r.validation);
    if c.udp_datagrams == 0 {
        return Sign::NoUdp;
    }
    if v.examined == 0 {
        return Sign::NotOnPorts {
            udp: c.udp_datagrams,
            ports: r.protocol.ports.clone(),
        };
    }
    Sign::NoneValid {
        examined: v.examined,
        crc_mismatch: v.crc_mismatch,
        too_short: v.too_short,
        truncated: v.truncated,
    }
}
