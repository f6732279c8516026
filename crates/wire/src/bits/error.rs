//! Read and write errors of the bit layer: a value that says what failed and at which bit.

use serde::Serialize;

/// What went wrong while reading or writing a primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ErrorKind {
    #[error("past end: needed {needed} bits, {available} available")]
    PastEnd { needed: u64, available: u64 },
    #[error("value {value} out of range [{min}, {max}]")]
    OutOfRange { value: i64, min: i64, max: i64 },
    #[error("non-zero padding {value:#x} in {bits} pad bits")]
    #[serde(rename = "nonzero_padding")]
    NonZeroPadding { value: u32, bits: u32 },
    #[error("check failed: expected {expected:#010x}, got {got:#010x}")]
    CheckMismatch { expected: u32, got: u32 },
    /// A caller's mistake (width over 32, min > max, value wider than its bits);
    /// never produced by packet bytes alone.
    #[error("invalid argument: {what}")]
    Invalid { what: &'static str },
}

impl ErrorKind {
    /// Short stable name used in reports, JSON and the conformance vectors.
    pub fn code(&self) -> &'static str {
        match self {
            ErrorKind::PastEnd { .. } => "past_end",
            ErrorKind::OutOfRange { .. } => "out_of_range",
            ErrorKind::NonZeroPadding { .. } => "nonzero_padding",
            ErrorKind::CheckMismatch { .. } => "check",
            ErrorKind::Invalid { .. } => "invalid",
        }
    }
}

/// An error located at a bit offset from the start of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{kind} at bit {at}")]
pub struct BitError {
    pub kind: ErrorKind,
    pub at: u64,
}

impl BitError {
    pub fn new(kind: ErrorKind, at: u64) -> Self {
        BitError { kind, at }
    }
}

pub type BitResult<T> = Result<T, BitError>;
