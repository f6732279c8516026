//! Packet and message types: a `packet`'s (or `message`'s) id, name, Info template,
//! sequence space and sending side.

use super::*;

impl<'d> Compiler<'d> {
    /// A packet's type id and name: in the type range, not type 0 when that is the
    /// fragments', not a type defined twice (a `plaintext` block replaces its packet).
    pub(super) fn packet_id(
        &mut self,
        p: &KdlNode,
        num_types: u32,
        base: u32,
        fragment_type_zero: bool,
        seen: &mut HashMap<u32, (String, usize)>,
    ) -> Option<(i64, String)> {
        let args = positional(p);
        let id = self.arg_int(p, 0, "the packet type id")?;
        let name = args
            .get(1)
            .and_then(|e| e.value().as_string())
            .map(str::to_string)
            .unwrap_or_else(|| format!("type{id}"));
        let id_span = args[0].span();
        let what = p.name().value();
        if id < 0 || id as u64 >= num_types as u64 {
            let whose = if what == "message" && base > 0 {
                "messages'"
            } else {
                "header's"
            };
            self.error(
                id_span,
                format!(
                    "{what} type {id} is outside the {whose} type range 0..{}",
                    num_types.saturating_sub(1)
                ),
                "type id",
                Some(format!("widen the {whose} type field or renumber the {what}")),
            );
            return None;
        }
        if id == 0 && fragment_type_zero {
            self.error(
                id_span,
                "packet type 0 is reserved for fragments",
                "type id",
                Some("number game packets from 1".into()),
            );
            return None;
        }
        let line = self.line_of(id_span);
        // A `plaintext` block, compiled after every packet, takes its type over (the
        // packets' fields keep their ids, so either view's trees print with this one).
        let replaces = self.plaintext_view && p.name().value() == "plaintext";
        if let Some((other, other_line)) = seen.get(&(id as u32 + base)).filter(|_| !replaces) {
            self.error(
                id_span,
                format!("{what} type {id} is defined twice"),
                "type id clash",
                Some(format!("type {id} is already `{other}` (line {other_line})")),
            );
            return None;
        }
        if !replaces {
            seen.insert(id as u32 + base, (name.clone(), line));
        }
        Some((id, name))
    }

    /// `info="TEMPLATE"`: the Info column's text, its span kept to check its paths.
    pub(super) fn packet_info(
        &mut self,
        p: &KdlNode,
        index: usize,
        info_spans: &mut Vec<(usize, SourceSpan)>,
    ) -> Option<String> {
        prop(p, "info").and_then(|e| match e.value().as_string() {
            Some(t) => {
                info_spans.push((index, e.span()));
                Some(t.to_string())
            }
            None => {
                self.error(
                    e.span(),
                    "`info` is a text",
                    "",
                    Some("for example `info=\"{#objects} objects\"`".into()),
                );
                None
            }
        })
    }

    /// `sequence-space="NAME"`: the space the packet's sequences count in (0: the flow's).
    pub(super) fn packet_space(&mut self, p: &KdlNode, spaces: &[SequenceSpace]) -> u8 {
        match prop(p, "sequence-space") {
            None => 0,
            Some(e) => match e.value().as_string() {
                Some(name) => match spaces.iter().position(|s: &SequenceSpace| s.name == name) {
                    Some(i) => i as u8,
                    None => {
                        self.unknown_space(e.span(), name, spaces);
                        0
                    }
                },
                None => {
                    self.error(
                        e.span(),
                        "`sequence-space` is a name",
                        "",
                        Some("for example `sequence-space=\"global\"`".into()),
                    );
                    0
                }
            },
        }
    }

    /// `from=client|server`: the side that sends the packet, if only one does.
    pub(super) fn packet_side(&mut self, p: &KdlNode) -> Option<Side> {
        match prop(p, "from") {
            None => None,
            Some(e) => match e.value().as_string() {
                Some("client") => Some(Side::Client),
                Some("server") => Some(Side::Server),
                _ => {
                    self.error(
                        e.span(),
                        "`from` is client or server",
                        "side",
                        Some(
                            "write `from=client` or `from=server`, or leave it out when both send it".into(),
                        ),
                    );
                    None
                }
            },
        }
    }
}
