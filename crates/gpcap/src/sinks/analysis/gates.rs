//! CI gates over a report (`--fail-on crc,mtu,malformed,frag-loss=RATE,fit`).

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
}
