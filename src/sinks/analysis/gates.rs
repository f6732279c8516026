//! CI gates over a report (`--fail-on crc,mtu,malformed,frag-loss=RATE,fit`).

use super::Report;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gate {
    Crc,
    Mtu,
    Malformed,
    /// Fragment loss above this rate (0 to 1).
    FragLoss(f64),
    /// The description's fit is not good (doubtful or does not fit).
    Fit,
}

/// A `--fail-on` gate that does not parse; each holds the gate as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    #[error("--fail-on {0}: frag-loss=RATE takes a rate from 0 to 1, e.g. frag-loss=0.05")]
    FragLossRate(String),
    #[error("unknown --fail-on gate `{0}` (crc, mtu, malformed, frag-loss=RATE, fit)")]
    Unknown(String),
}

impl Gate {
    pub fn parse(s: &str) -> Result<Gate, GateError> {
        let (name, arg) = s.split_once('=').map_or((s, None), |(a, b)| (a, Some(b)));
        match (name, arg) {
            ("crc", None) => Ok(Gate::Crc),
            ("mtu", None) => Ok(Gate::Mtu),
            ("malformed", None) => Ok(Gate::Malformed),
            ("fit", None) => Ok(Gate::Fit),
            ("frag-loss", Some(r)) => match r.parse::<f64>() {
                Ok(x) if (0.0..=1.0).contains(&x) => Ok(Gate::FragLoss(x)),
                _ => Err(GateError::FragLossRate(s.to_string())),
            },
            ("frag-loss", None) => Ok(Gate::FragLoss(0.0)),
            _ => Err(GateError::Unknown(s.to_string())),
        }
    }

    /// Why the report crosses this gate, if it does.
    pub fn crossed(&self, r: &Report) -> Option<String> {
        match *self {
            Gate::Crc if r.validation.crc_mismatch > 0 => Some(format!(
                "crc: {} failed the CRC",
                crate::present::count(r.validation.crc_mismatch, "datagram")
            )),
            Gate::Mtu if r.mtu.over_budget + r.mtu.ip_fragmented > 0 => Some(format!(
                "mtu: {} payloads over the {}-byte budget, {} IP-fragmented",
                r.mtu.over_budget, r.mtu.budget, r.mtu.ip_fragmented
            )),
            Gate::Malformed if r.malformed.total > 0 => {
                Some(format!("malformed: {} malformed packets", r.malformed.total))
            }
            Gate::FragLoss(limit) if r.reassembly.fragment_loss > limit => Some(format!(
                "frag-loss: fragment loss {:.2}% over {:.2}%",
                r.reassembly.fragment_loss * 100.0,
                limit * 100.0
            )),
            Gate::Fit if !r.fit.is_good() => Some(format!("fit: {}", crate::present::fit::summary(&r.fit))),
            _ => None,
        }
    }
}
