//! What the fit says of the description: its verdict, the signs it rests on, the flows
//! that do not fit and the findings held back. The report holds these; `fit.rs` judges
//! them from the finished counters.

use super::FlowId;
use serde::Serialize;

/// Good, doubtful or does not fit, ordered from best to worst; nothing judged when no
/// datagram could be (none on the protocol's ports, or none passed its checksum): a
/// description that meets no traffic has not been shown to fit it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    #[default]
    Good,
    NothingJudged,
    Doubtful,
    DoesNotFit,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::NothingJudged => "nothing judged",
            Verdict::Doubtful => "doubtful",
            Verdict::DoesNotFit => "does not fit",
        }
    }
}

/// The first datagram the description failed on, and where.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FirstFailure {
    /// Input file (0-based) and frame number in it (1-based).
    pub file: u32,
    pub frame: u64,
    /// The fault's code (`out_of_range`, `past_end`, `trailing_bytes`, …).
    pub cause: String,
    /// The field being read and its bit offset in the datagram, when the frame was read
    /// again to find them (`analyze` does).
    pub field: Option<String>,
    pub bit: Option<u64>,
}

/// The fit of each analysis the report prints: a doubtful one says so where its table
/// is, and its loss figures are held back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Analyses {
    /// Fragment reassembly (datagram fragments and fragments inside messages).
    pub fragments: Verdict,
    /// The ack analysis.
    pub acks: Verdict,
    /// The message streams' sequence analysis.
    pub streams: Verdict,
}

/// One sign the fit rests on, as data: `present::fit` says it in words (and JSON carries
/// those words, as it always has).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Sign {
    /// The capture holds no UDP datagram.
    NoUdp,
    /// None of the capture's `udp` datagrams is on the protocol's `ports`.
    NotOnPorts { udp: u64, ports: Vec<u16> },
    /// None of the `examined` datagrams on the ports passed validation.
    NoneValid {
        examined: u64,
        crc_mismatch: u64,
        too_short: u64,
        truncated: u64,
    },
    /// `n` of `datagrams` judged fail at `what`.
    Share { n: u64, datagrams: u64, what: Failing },
    /// `flows` of `game_flows` have a sequence or fragment field that does not read as one.
    FlowsDoNotRead {
        flows: u64,
        game_flows: u64,
        datagrams: u64,
        game_datagrams: u64,
    },
    /// More sequences lost than seen.
    SeqLost { lost: u64, received: u64 },
    /// The sequence jumped by over a quarter of its `bits`-bit space `jumps` times.
    SeqJumps { bits: u32, jumps: u64 },
    /// Much of the sequence arrived late.
    SeqLate { late: u64, received: u64 },
    /// Fragments refused beside few completed.
    RefusedFragments {
        refused: u64,
        count_changed: u64,
        id_out_of_range: u64,
        count_out_of_range: u64,
        completed: u64,
        seen: u64,
    },
    /// Fragments that never shared a group.
    NeverSharedGroup { fragments: u64, groups: u64 },
    /// A direction's acks leave far more never acked than the capture loses (shares, 0–1).
    NeverAcked {
        flow: FlowId,
        never_acked: f64,
        captured_loss: f64,
    },
    /// Acks and NAKs that name sequences never sent.
    AcksOfUnsent { flow: FlowId, unsent: u64, acked: u64 },
    /// A message stream lost more than it received.
    StreamLost {
        name: String,
        key: String,
        flow: FlowId,
        lost: u64,
        received: u64,
    },
    /// Much of a message stream arrived late.
    StreamLate {
        name: String,
        key: String,
        flow: FlowId,
        late: u64,
        received: u64,
    },
}

/// What a share of the datagrams fails at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failing {
    Header,
    Body,
    Trailing,
}

/// One flow whose fit is not good.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FlowFit {
    pub flow: FlowId,
    pub datagrams: u64,
    pub verdict: Verdict,
    pub rests_on: Vec<Sign>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Fit {
    pub verdict: Verdict,
    /// Why, one sign each (empty when the fit is good).
    pub rests_on: Vec<Sign>,
    /// Datagrams judged: those that passed the checksum (or, without one, were on the
    /// ports), the denominator of the shares below.
    pub datagrams: u64,
    pub header_errors: u64,
    pub body_errors: u64,
    pub trailing_bytes: u64,
    /// Flows whose fit is not good.
    pub flows: Vec<FlowFit>,
    /// Each analysis' own fit (the verdict is the worst of them and the datagrams').
    pub analyses: Analyses,
    pub first_failure: Option<FirstFailure>,
    /// Findings held back because they rest on a doubtful figure.
    pub suppressed: Vec<super::Finding>,
    /// Zero configuration whose reference layout does not fit: said instead of numbers.
    pub note: Option<FitNote>,
}

/// What the fit says instead of numbers (said in words where the report is shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FitNote {
    /// The reference header does not fit the traffic: `header_errors` of `datagrams`
    /// failed it, and a definition (`-d`) is needed.
    ReferenceMisfit { header_errors: u64, datagrams: u64 },
}
