//! A field path compiled on its own, for the Info column's templates.

use super::*;

/// A field path compiled against a definition (`objects.at_rest`, `scene.objects[0].index`):
/// its occurrences in a field tree, for the Info column's templates.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPath {
    segs: Vec<Step>,
    packet_type: Option<u32>,
}

impl FieldPath {
    /// `paths` is the definition's catalog; the error says what is wrong and what is near.
    pub fn parse(program: &Program, paths: &[PathInfo], text: &str) -> Result<FieldPath, String> {
        let p = Parser {
            toks: Vec::new(),
            pos: 0,
            program: Some(program),
            paths: paths.to_vec(),
            layers: &[],
            needs_engine: false,
            needs_acks: false,
            len: 0,
            depth: 0,
        };
        match p.resolve(text) {
            Ok((packet_type, Some(_))) => Ok(FieldPath {
                segs: steps(program, text, packet_type.is_some()),
                packet_type,
            }),
            Ok((_, None)) => Err(format!("`{text}` is a packet type, not a field")),
            Err(e) => Err(e.message),
        }
    }

    /// The fields of `d` (a packet of type `packet_type`) that are occurrences of the path.
    pub fn occurrences<'d>(
        &'d self,
        d: &'d Dissection,
        packet_type: Option<u32>,
    ) -> impl Iterator<Item = usize> + 'd {
        let wrong_type = self.packet_type.is_some() && self.packet_type != packet_type;
        (0..d.fields.len()).filter(move |&i| !wrong_type && is_occurrence(&self.segs, d, i))
    }
}
