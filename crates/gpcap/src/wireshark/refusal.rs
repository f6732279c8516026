//! What cannot be written as a Lua dissector, said by name: a construct the generator
//! does not know (a later addition to the language) or one Lua cannot hold exactly.

/// A construct of a definition that the generated Lua could not read as gpcap does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{protocol}: {construct}{place} cannot be written as a Wireshark Lua dissector: {why}")]
pub struct Refusal {
    /// The definition's protocol name.
    pub protocol: String,
    /// The construct, as the definition spells it (`role=ack-window`, `int big …`).
    pub construct: String,
    /// Where: ` (definition line 12)`, or empty.
    pub place: String,
    pub why: String,
}

impl Refusal {
    pub fn new(protocol: &str, construct: impl Into<String>, line: u32, why: impl Into<String>) -> Self {
        Refusal {
            protocol: protocol.to_string(),
            construct: construct.into(),
            place: if line > 0 {
                format!(" (definition line {line})")
            } else {
                String::new()
            },
            why: why.into(),
        }
    }
}
