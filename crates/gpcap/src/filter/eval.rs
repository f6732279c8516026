//! Evaluating a compiled filter on a packet event: definite answers before the
//! dissection where it can, every occurrence of a field where it must.

use super::*;

/// What a filter knows beyond the packet: when the run started, what the acks settled.
pub(super) struct Context<'a> {
    pub(super) origin: i64,
    pub(super) acks: Option<&'a AckFacts>,
    pub(super) stacked: Option<&'a Stacked>,
}

impl Context<'_> {
    /// The round trip (µs) or NEVER of the packet's sequence, when settled.
    pub(super) fn settled(&self, f: &PacketEvent) -> Option<u32> {
        if !f.is_game() {
            return None;
        }
        self.acks?.of(f.flow?, f.sequence?, f.ts_ns)
    }

    /// The round trips (µs) or NEVER of the packet's messages in their acked streams,
    /// those settled.
    pub(super) fn settled_messages<'b>(&'b self, f: &'b PacketEvent) -> impl Iterator<Item = u32> + 'b {
        let (acks, flow) = (self.acks.filter(|_| f.is_game()), f.flow);
        (f.stream_events().iter())
            .filter_map(move |s| acks?.of_stream(flow?, (s.stream, s.key), s.sequence, f.ts_ns))
    }

    /// The round trips (µs) of the packet's sequence and of its messages, those timed.
    pub(super) fn rtts<'b>(&'b self, f: &'b PacketEvent) -> impl Iterator<Item = i128> + 'b {
        (self.settled(f).into_iter().chain(self.settled_messages(f)))
            .filter(|&us| Settled::is_rtt(us))
            .map(i128::from)
    }

    /// What the ack analysis said of the packet's sequence and of each of its messages'
    /// in their acked streams.
    pub(super) fn verdicts<'b>(&'b self, f: &'b PacketEvent) -> impl Iterator<Item = CopyVerdict> + 'b {
        let acks = self.acks.filter(|_| f.is_game());
        let own = acks.and_then(|a| Some(a.verdict(f.flow?, f.sequence?, f.ts_ns)));
        own.into_iter()
            .chain((f.stream_events().iter()).filter_map(move |s| {
                Some(acks?.verdict_in_stream(f.flow?, (s.stream, s.key), s.sequence, f.ts_ns))
            }))
    }
}

pub(super) fn eval(n: &Node, f: &PacketEvent, cx: &Context) -> bool {
    match n {
        Node::True => true,
        Node::Not(a) => !eval(a, f, cx),
        Node::And(a, b) => eval(a, f, cx) && eval(b, f, cx),
        Node::Or(a, b) => eval(a, f, cx) || eval(b, f, cx),
        Node::Flag(flag) => match flag {
            Flag::CrcFail => f.status.crc_failed(),
            Flag::CrcMismatch => f.status == gpcap_engine::Status::CrcMismatch,
            Flag::TooShort => f.status == gpcap_engine::Status::TooShort,
            Flag::CrcOk => f.crc_ok(),
            Flag::Frag => f.fragment.is_some(),
            Flag::IpFrag => f.ip_fragments > 1,
            Flag::Malformed => f.fault.is_some(),
            Flag::OverBudget => f.over_budget,
            Flag::Truncated => f.truncated || f.snaplen_cut(),
            Flag::Game => f.is_game(),
            Flag::Udp => f.flow.is_some(),
            Flag::Ipv4 => f.flow.is_some_and(|fl| fl.src.is_ipv4()),
            Flag::Ipv6 => f.flow.is_some_and(|fl| fl.src.is_ipv6()),
            Flag::Reassembled => f.kind == Kind::Reassembled,
            Flag::Late => f.seq_event == Some(SeqEvent::Late),
            Flag::Dup => f.seq_event == Some(SeqEvent::Duplicate),
            Flag::Gap => matches!(f.seq_event, Some(SeqEvent::New { gap }) if gap > 0),
            Flag::StreamLate => f.stream_events().iter().any(|s| s.event == SeqEvent::Late),
            Flag::StreamDup => (f.stream_events().iter()).any(|s| s.event == SeqEvent::Duplicate),
            Flag::StreamGap => {
                (f.stream_events().iter()).any(|s| matches!(s.event, SeqEvent::New { gap } if gap > 0))
            }
            Flag::NeverAcked => {
                cx.settled(f) == Some(Settled::NEVER) || cx.settled_messages(f).any(|us| us == Settled::NEVER)
            }
            Flag::Retransmission => cx.verdicts(f).any(|v| v.copy.is_some()),
            Flag::Spurious => cx.verdicts(f).any(|v| v.copy == Some(true)),
            Flag::Naked => cx.verdicts(f).any(|v| v.naked),
            Flag::Replayed => f.fault == Some(FaultKind::Replayed),
            Flag::MacFailure => f.fault == Some(FaultKind::Mac),
        },
        Node::Addr(end, net, port) => {
            let Some(fl) = f.flow else { return false };
            let at = |a: SocketAddr| net.holds(a.ip()) && port.is_none_or(|p| a.port() == p);
            match end {
                End::Src => at(fl.src),
                End::Dst => at(fl.dst),
                End::Either => at(fl.src) || at(fl.dst),
            }
        }
        Node::Proto(p) => gpcap_wire::decode::headers::has(f.linktype, f.frame_data, p),
        Node::Header(name, t) => wire::eval(name, t, f),
        Node::In(Field::Port, ranges) => f.flow.is_some_and(|fl| {
            let inside = |p: u16| ranges.iter().any(|(a, b)| (*a..=*b).contains(&(p as i128)));
            inside(fl.src.port()) || inside(fl.dst.port())
        }),
        Node::In(Field::StreamGap, ranges) => {
            stream_gaps(f).any(|x| ranges.iter().any(|(a, b)| (*a..=*b).contains(&x)))
        }
        Node::In(Field::Rtt, ranges) => cx
            .rtts(f)
            .any(|x| ranges.iter().any(|(a, b)| (*a..=*b).contains(&x))),
        Node::Compare(Field::Rtt, Cmp::Ne, v) => !cx.rtts(f).any(|x| x == *v),
        Node::Compare(Field::Rtt, cmp, v) => cx.rtts(f).any(|x| ordered(*cmp, x.cmp(v))),
        Node::Compare(Field::StreamGap, cmp, v) => stream_gaps(f).any(|x| ordered(*cmp, x.cmp(v))),
        Node::In(field, ranges) => {
            field_value(*field, f, cx).is_some_and(|x| ranges.iter().any(|(a, b)| (*a..=*b).contains(&x)))
        }
        Node::Compare(Field::Port, cmp, v) => {
            // Either end: any satisfies; `!=` is `!(udp.port == v)`.
            let Some(fl) = f.flow else { return *cmp == Cmp::Ne };
            let test = |p: u16, c: Cmp| ordered(c, (p as i128).cmp(v));
            if *cmp == Cmp::Ne {
                !(test(fl.src.port(), Cmp::Eq) || test(fl.dst.port(), Cmp::Eq))
            } else {
                test(fl.src.port(), *cmp) || test(fl.dst.port(), *cmp)
            }
        }
        Node::Compare(field, cmp, v) => {
            let Some(x) = field_value(*field, f, cx) else {
                return *cmp == Cmp::Ne;
            };
            ordered(*cmp, x.cmp(v))
        }
        Node::Dissected(t) => field_test(t, f),
        Node::Layer(at, n) => cx
            .stacked
            .is_some_and(|s| layers::any_carried(s, *at, f, &|inner| eval(n, inner, cx))),
    }
}

/// The gaps before each message of the packet that is new in its stream.
pub(super) fn stream_gaps<'a>(f: &PacketEvent<'a>) -> impl Iterator<Item = i128> + 'a {
    f.stream_events().iter().filter_map(|s| match s.event {
        SeqEvent::New { gap } => Some(gap as i128),
        _ => None,
    })
}

/// A built-in field's value in the packet (`None`: it has none).
pub(super) fn field_value(field: Field, f: &PacketEvent, cx: &Context) -> Option<i128> {
    match field {
        Field::Type => f.packet_type.map(i128::from),
        Field::Seq => f.sequence.map(i128::from),
        Field::Size => f.flow.map(|_| f.size as i128),
        Field::Frame => Some(f.frame as i128),
        Field::FragId => f.fragment.map(|x| x.id as i128),
        Field::FragCount => f.fragment.map(|x| x.count as i128),
        Field::Ack => f.ack.map(i128::from),
        Field::AckBits => f.ack_bits.map(i128::from),
        Field::SrcPort => f.flow.map(|fl| fl.src.port() as i128),
        Field::DstPort => f.flow.map(|fl| fl.dst.port() as i128),
        Field::Port => None,
        Field::Time => Some(f.ts_ns as i128 - cx.origin as i128),
        Field::Rtt => cx.settled(f).filter(|&us| Settled::is_rtt(us)).map(i128::from),
        Field::StreamGap => stream_gaps(f).max(),
        Field::Epoch => Some(f.ts_ns as i128),
        Field::Gap => match f.seq_event {
            Some(SeqEvent::New { gap }) => Some(gap as i128),
            _ => None,
        },
        Field::FrameLen => Some(f.wire_len as i128),
        Field::CapLen => Some(f.frame_data.len() as i128),
    }
}

/// [`eval`] in three values: `None` where the field tree or the ack roles decide.
pub(super) fn decide(n: &Node, f: &PacketEvent, cx: &Context) -> Option<bool> {
    match n {
        Node::Not(a) => decide(a, f, cx).map(|b| !b),
        Node::And(a, b) => match decide(a, f, cx) {
            Some(false) => Some(false),
            x => match (x, decide(b, f, cx)) {
                (_, Some(false)) => Some(false),
                (Some(true), y) => y,
                _ => None,
            },
        },
        Node::Or(a, b) => match decide(a, f, cx) {
            Some(true) => Some(true),
            x => match (x, decide(b, f, cx)) {
                (_, Some(true)) => Some(true),
                (Some(false), y) => y,
                _ => None,
            },
        },
        // Of another packet type: as when the packet has no tree (see `field_test`).
        Node::Dissected(t) if t.packet_type.is_some_and(|ty| f.packet_type != Some(ty)) => {
            Some(matches!(t.test, Test::Compare(Cmp::Ne, _)) && !t.all)
        }
        Node::Dissected(_)
        | Node::Layer(..)
        | Node::Header(..)
        | Node::Proto(_)
        | Node::Flag(
            Flag::StreamLate
            | Flag::StreamDup
            | Flag::StreamGap
            | Flag::NeverAcked
            | Flag::Retransmission
            | Flag::Spurious
            | Flag::Naked,
        )
        | Node::Compare(
            Field::Ack | Field::AckBits | Field::FrameLen | Field::CapLen | Field::StreamGap | Field::Rtt,
            ..,
        )
        | Node::In(
            Field::Ack | Field::AckBits | Field::FrameLen | Field::CapLen | Field::StreamGap | Field::Rtt,
            _,
        ) => None,
        n => Some(eval(n, f, cx)),
    }
}

impl Node {
    /// A header field, a header's protocol or a frame length is tested somewhere.
    pub(super) fn reads_frames(&self) -> bool {
        match self {
            Node::Header(..) | Node::Proto(_) => true,
            Node::Compare(f, ..) | Node::In(f, _) => matches!(f, Field::FrameLen | Field::CapLen),
            Node::Not(a) | Node::Layer(_, a) => a.reads_frames(),
            Node::And(a, b) | Node::Or(a, b) => a.reads_frames() || b.reads_frames(),
            _ => false,
        }
    }

    /// The filter reads an inner layer somewhere.
    pub(super) fn names_layer(&self) -> bool {
        match self {
            Node::Layer(..) => true,
            Node::Not(a) => a.names_layer(),
            Node::And(a, b) | Node::Or(a, b) => a.names_layer() || b.names_layer(),
            _ => false,
        }
    }
}

pub(super) fn ordered(cmp: Cmp, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match cmp {
        Cmp::Eq => o == Equal,
        Cmp::Ne => o != Equal,
        Cmp::Lt => o == Less,
        Cmp::Le => o != Greater,
        Cmp::Gt => o == Greater,
        Cmp::Ge => o != Less,
    }
}

/// Wireshark's semantics: any occurrence satisfies, `!=` none is equal; `all`: every
/// occurrence, and at least one.
pub(super) fn field_test(t: &FieldTest, e: &PacketEvent) -> bool {
    let negated = matches!(t.test, Test::Compare(Cmp::Ne, _));
    let Some(d) = e.dissection else {
        return negated && !t.all;
    };
    if t.packet_type.is_some_and(|ty| e.packet_type != Some(ty)) {
        return negated && !t.all;
    }
    let mut seen = false;
    for (i, field) in d.fields.iter().enumerate() {
        if !is_occurrence(&t.segs, d, i) {
            continue;
        }
        seen = true;
        let ok = occurrence(t, field.value, e.payload);
        match (t.all, negated) {
            // `!=`: true when no occurrence equals, i.e. every one differs.
            (_, true) if !ok => return false,
            (false, false) if ok => return true,
            (true, false) if !ok => return false,
            _ => {}
        }
    }
    if negated { true } else { t.all && seen }
}

/// One occurrence's value against the test (`!=` is tested as its `==` being false).
pub(super) fn occurrence(t: &FieldTest, v: Value, payload: &[u8]) -> bool {
    match &t.test {
        Test::Exists => true,
        Test::Contains(needle) => bytes_of(v, payload).is_some_and(|b| contains(b, needle)),
        Test::Matches(p) => bytes_of(v, payload).is_some_and(|b| p.re.is_match(b)),
        Test::In(members) => members.iter().any(|(lo, hi)| {
            if lo == hi {
                compare(t.holds, v, Cmp::Eq, lo, payload) == Some(true)
            } else {
                compare(t.holds, v, Cmp::Ge, lo, payload) == Some(true)
                    && compare(t.holds, v, Cmp::Le, hi, payload) == Some(true)
            }
        }),
        Test::Compare(cmp, operand) => compare(t.holds, v, *cmp, operand, payload).unwrap_or(*cmp == Cmp::Ne),
    }
}

pub(super) fn bytes_of(v: Value, payload: &[u8]) -> Option<&[u8]> {
    match v {
        Value::Bytes { offset, len } => payload.get(offset..offset.checked_add(len)?),
        _ => None,
    }
}

pub(super) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// `value CMP operand`; `None` when the value is not of the operand's kind.
pub(super) fn compare(holds: Holds, v: Value, cmp: Cmp, operand: &Operand, payload: &[u8]) -> Option<bool> {
    let int = match v {
        Value::Int(x) => Some(x as i128),
        Value::UInt(x) => Some(x as i128),
        Value::Bool(b) => Some(b as i128),
        _ => None,
    };
    let float = match v {
        Value::Float(x) => Some(x as f64),
        Value::Double(x) => Some(x),
        _ => int.map(|i| i as f64),
    };
    Some(match operand {
        Operand::Int(n) => ordered(cmp, int?.cmp(n)),
        Operand::Bool(b) => ordered(cmp, (int? != 0).cmp(b)),
        Operand::Bytes(want) => ordered(cmp, bytes_of(v, payload)?.cmp(want.as_slice())),
        Operand::Float(want) => {
            let x = float?;
            let order = match (holds, v) {
                // Equal within half the step of a compressed float.
                (Holds::Float { step }, _)
                    if step > 0.0 && (x - want).abs() <= step / 2.0 + 1e-9 * want.abs() =>
                {
                    std::cmp::Ordering::Equal
                }
                // An f32 as read equals the value rounded to f32.
                (_, Value::Float(f)) => f.partial_cmp(&(*want as f32))?,
                _ => x.partial_cmp(want)?,
            };
            ordered(cmp, order)
        }
    })
}
