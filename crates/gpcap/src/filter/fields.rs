//! Dissected fields in a filter: paths resolved against the definition (and its
//! layers), their operands, and what is said when a name is near another.

use super::*;

impl<'a> Parser<'a> {
    /// `[any|all] PATH [OP VALUE | contains "TEXT"]`: a dissected field.
    pub(super) fn dissected(&mut self) -> Result<Node, FilterError> {
        let quantifier = self
            .peek()
            .filter(|w| ["all", "any"].contains(w))
            .map(str::to_string);
        let all = quantifier.as_deref() == Some("all");
        if quantifier.is_some() {
            self.pos += 1;
        }
        let Some(word) = self.peek().map(str::to_string) else {
            return Err(self.err("expected a field after any/all"));
        };
        let word = self.own_protocol(word);
        if let Some(op) = operator_word(&word) {
            return Err(self.err(format!("expected a field or flag, found the operator {op}")));
        }
        if let Some(q) = &quantifier
            && FIELD_NAMES.contains(&word.as_str())
            && !self.paths.iter().any(|e| e.path == word)
        {
            return Err(self.err(format!(
                "`{q}` applies to dissected fields, and `{word}` is a built-in field: write `{word}` alone"
            )));
        }
        if let Some(n) = self.layered(&word, all)? {
            return Ok(n);
        }
        let Some(program) = self.program else {
            let hint = self
                .builtin_hint(&word)
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            return Err(self.err(format!(
                "unknown filter word `{word}`; {hint}(fields: {BUILTIN_FIELDS}; flags: {FLAGS}; src/dst/flow ADDR; dissected fields need a definition: -d)"
            )));
        };
        let (packet_type, path) = self.resolve(&word)?;
        let Some(info) = path else {
            // A packet type's name alone: `scene` is `type == scene`.
            self.pos += 1;
            let t = packet_type.unwrap_or(u32::MAX) as i128;
            return Ok(Node::Compare(Field::Type, Cmp::Eq, t));
        };
        if let Some(bad) = word.split('.').find(|part| {
            part.split_once('[')
                .is_some_and(|(_, rest)| rest.strip_suffix(']').is_none_or(|n| n.parse::<u32>().is_err()))
        }) {
            return Err(self.err(format!(
                "`{bad}`: an element index is a number in brackets, like objects[3]"
            )));
        }
        let segs = steps(program, &word, packet_type.is_some());
        if segs.iter().any(|s| s.index.is_some()) && !self.indexes_fit(&segs) {
            return Err(self.err(format!("`{word}`: only an array or list takes an index")));
        }
        self.pos += 1;
        self.needs_engine = true;
        let test = match self.peek() {
            Some("contains") => {
                self.pos += 1;
                if !matches!(info.holds, Holds::Text | Holds::Bytes) {
                    return Err(self.err(format!(
                        "`{word}` is not text or bytes: `contains` does not apply"
                    )));
                }
                match self.peek() {
                    Some(v) if v.starts_with('"') => {
                        let text = unquote(v).to_vec();
                        self.pos += 1;
                        Test::Contains(text)
                    }
                    _ => return Err(self.err("`contains` needs a quoted string, like \"gg\"")),
                }
            }
            Some("matches") => {
                self.pos += 1;
                if !matches!(info.holds, Holds::Text | Holds::Bytes) {
                    return Err(self.err(format!("`{word}` is not text or bytes: `matches` does not apply")));
                }
                match self.peek() {
                    Some(v) if v.starts_with('"') => {
                        let text = String::from_utf8_lossy(unquote(v)).into_owned();
                        let pattern = wire::Pattern::new(&text).map_err(|m| self.err(m))?;
                        self.pos += 1;
                        Test::Matches(pattern)
                    }
                    _ => return Err(self.err("`matches` needs a quoted regular expression, like \"^gg\"")),
                }
            }
            Some("in") => {
                self.pos += 1;
                let set = self.set(&word)?;
                self.pos -= 1;
                let mut members = Vec::new();
                for (a, b) in &set {
                    let lo = self.operand(program, &info, &word, a)?;
                    let hi = self.operand(program, &info, &word, b)?;
                    members.push((lo, hi));
                }
                self.pos += 1;
                Test::In(members)
            }
            Some(t) if cmp_of(t).is_some() => {
                let cmp = self.cmp(&word)?;
                let Some(v) = self.peek().map(str::to_string) else {
                    return Err(self.err("expected a value"));
                };
                let operand = self.operand(program, &info, &word, &v)?;
                if matches!(operand, Operand::Bytes(_) | Operand::Bool(_))
                    && !matches!(cmp, Cmp::Eq | Cmp::Ne)
                {
                    return Err(self.err(format!("`{v}` can only be compared with == or !=")));
                }
                self.pos += 1;
                Test::Compare(cmp, operand)
            }
            _ => Test::Exists,
        };
        Ok(Node::Dissected(Box::new(FieldTest {
            packet_type,
            segs,
            holds: info.holds,
            all,
            test,
        })))
    }

    /// `NAME.PATH`, NAME the definition's own protocol, is PATH: Wireshark's field names
    /// start with their protocol's, and `gpcap wireshark` names its fields so
    /// (`article.scene.objects.position.x`), so one filter reads the same in both.
    pub(super) fn own_protocol(&mut self, word: String) -> String {
        let Some(p) = self.program else { return word };
        match word
            .strip_prefix(p.params.name.as_str())
            .and_then(|r| r.strip_prefix('.'))
        {
            Some(rest) if !rest.is_empty() && !self.paths.iter().any(|e| e.path == strip_indices(&word)) => {
                let rest = rest.to_string();
                self.toks[self.pos].0 = rest.clone();
                rest
            }
            _ => word,
        }
    }

    /// `LAYER.PATH`: the path read in datagrams of an inner layer, by the layer's name
    /// (`None`: the word does not name one, or the outer definition has that path).
    pub(super) fn layered(&mut self, word: &str, all: bool) -> Result<Option<Node>, FilterError> {
        let (head, rest) = word.split_once('.').unwrap_or((word, ""));
        let Some(at) = self.layers.iter().position(|l| l.params.name == head) else {
            return Ok(None);
        };
        if self.paths.iter().any(|e| e.path == strip_indices(word)) {
            return Ok(None);
        }
        if rest.is_empty() {
            return Err(self.err(format!(
                "`{head}` is a layer: name one of its fields, like `{head}.FIELD`"
            )));
        }
        let layer: &'a Program = &self.layers[at];
        let saved = (self.program, std::mem::replace(&mut self.paths, catalog(layer)));
        self.program = Some(layer);
        let plain = strip_indices(rest);
        let first = plain.split('.').next().unwrap_or_default();
        if !self.paths.iter().any(|e| e.path == plain) && self.type_id(first).is_none() {
            // Only the layer's own fields: no built-in name is a hint here.
            let hint = nearest(&self.paths, &plain)
                .map(|n| format!("; did you mean `{head}.{n}`?"))
                .unwrap_or_default();
            let e = self.err(format!("layer {head} has no field `{rest}`{hint}"));
            self.program = saved.0;
            self.paths = saved.1;
            return Err(e);
        }
        self.toks[self.pos].0 = rest.to_string();
        // `all` is read again by the layer's parse.
        self.pos -= usize::from(all);
        let n = self.dissected();
        self.program = saved.0;
        self.paths = saved.1;
        let n = n.map_err(|mut e| {
            e.message = format!("layer {head}: {}", e.message);
            e
        })?;
        Ok(Some(Node::Layer(at, Box::new(n))))
    }

    /// The packet type a path starts with (if it does) and the path's entry; an unknown
    /// path is an error with the nearest known one.
    pub(super) fn resolve(&self, word: &str) -> Result<(Option<u32>, Option<PathInfo>), FilterError> {
        let plain = strip_indices(word);
        if let Some(e) = self.paths.iter().find(|e| e.path == plain) {
            return Ok((None, Some(e.clone())));
        }
        let (head, rest) = plain.split_once('.').unwrap_or((plain.as_str(), ""));
        if let Some(t) = self.type_id(head) {
            if rest.is_empty() {
                return Ok((Some(t), None));
            }
            if let Some(e) = self
                .paths
                .iter()
                .find(|e| e.path == rest && (e.types.is_empty() || e.types.contains(&t)))
            {
                return Ok((Some(t), Some(e.clone())));
            }
            let of_type: Vec<PathInfo> = self
                .paths
                .iter()
                .filter(|e| e.types.contains(&t) || e.types.is_empty())
                .cloned()
                .collect();
            let hint = nearest(&of_type, rest)
                .map(|n| format!("; did you mean `{head}.{n}`?"))
                .unwrap_or_default();
            return Err(self.err(format!("packet type {head} has no field `{rest}`{hint}")));
        }
        // A built-in name of the same kind (a flag alone, a field before a comparison)
        // first, then the definition's packet types and paths and the headers' names,
        // then built-in names of the other kind — each only when it is near enough to be
        // a slip (`scen` is `scene`, never `seq`; nothing is `t` for `eth`).
        let hint = self
            .builtin_hint(&plain)
            .or_else(|| self.definition_hint(&plain))
            .or_else(|| self.other_kind_hint(&plain))
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_else(|| format!(" (fields: {BUILTIN_FIELDS}; flags: {FLAGS}; src/dst/flow ADDR)"));
        let what = if self.compared() { "field" } else { "field or flag" };
        Err(self.err(format!("unknown {what} `{word}`{hint}")))
    }

    /// The word at the cursor is followed by a comparison: it names a field, not a flag.
    pub(super) fn compared(&self) -> bool {
        self.toks.get(self.pos + 1).is_some_and(|t| is_cmp(&t.0))
    }

    /// The nearest built-in name of the kind the word is used as (header fields among
    /// the fields, header protocols among the flags).
    pub(super) fn builtin_hint(&self, word: &str) -> Option<String> {
        let headers = wire::HEADER_FIELDS.iter().map(|(n, _)| *n);
        let names: Vec<&'static str> = if self.compared() {
            FIELD_NAMES.iter().copied().chain(headers).collect()
        } else {
            FLAG_NAMES
                .iter()
                .copied()
                .chain(wire::HEADER_WORDS.iter().copied())
                .collect()
        };
        closest(&names, word).map(str::to_string)
    }

    pub(super) fn other_kind_hint(&self, word: &str) -> Option<String> {
        let names = if self.compared() { FLAG_NAMES } else { FIELD_NAMES };
        closest(names, word).map(str::to_string)
    }

    /// The definition's nearest packet type (a word alone, or a path's first part) or
    /// path, when near enough.
    pub(super) fn definition_hint(&self, word: &str) -> Option<String> {
        let types: Vec<&str> = self
            .program
            .map(|p| p.packets.iter().map(|d| d.name.as_str()).collect())
            .unwrap_or_default();
        let (head, rest) = word.split_once('.').unwrap_or((word, ""));
        let typed = types
            .iter()
            .map(|t| (gpcap_dissect::paths::distance(t, head), *t))
            .filter(|(_, t)| wire::plausible(head, t))
            .min_by_key(|(d, _)| *d)
            .map(|(d, t)| {
                (
                    d,
                    if rest.is_empty() {
                        t.to_string()
                    } else {
                        format!("{t}.{rest}")
                    },
                )
            });
        let path = nearest(&self.paths, word)
            .filter(|n| wire::plausible(word, n) || n.ends_with(&format!(".{word}")))
            .map(|n| (gpcap_dissect::paths::distance(n, word), n.to_string()));
        match (typed, path) {
            (Some(t), Some(p)) => Some(if t.0 <= p.0 { t.1 } else { p.1 }),
            (t, p) => t.or(p).map(|x| x.1),
        }
    }

    /// Every indexed segment names an array or list.
    pub(super) fn indexes_fit(&self, segs: &[Step]) -> bool {
        let mut path = String::new();
        for s in segs {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&s.name);
            if s.index.is_some() && !self.paths.iter().any(|e| e.path == path && e.indexed) {
                return false;
            }
        }
        true
    }

    /// A value for a field that holds `info.holds`: a number, true/false, an enum's name,
    /// or a quoted string.
    pub(super) fn operand(
        &self,
        program: &Program,
        info: &PathInfo,
        word: &str,
        v: &str,
    ) -> Result<Operand, FilterError> {
        if v.starts_with('"') {
            return match info.holds {
                Holds::Text | Holds::Bytes => Ok(Operand::Bytes(unquote(v).to_vec())),
                _ => Err(self.err(format!("`{word}` holds numbers, not text"))),
            };
        }
        if let Some(n) = parse_int(v) {
            return match info.holds {
                Holds::Bool if n == 0 || n == 1 => Ok(Operand::Bool(n == 1)),
                Holds::Float { .. } | Holds::Double => Ok(Operand::Float(n as f64)),
                Holds::Text | Holds::Bytes => {
                    Err(self.err(format!("`{word}` holds text or bytes: quote the value")))
                }
                _ => Ok(Operand::Int(n)),
            };
        }
        if let Ok(x) = v.parse::<f64>()
            && x.is_finite()
            && !v.chars().all(char::is_alphabetic)
        {
            return match info.holds {
                Holds::Float { .. } | Holds::Double | Holds::Int { .. } | Holds::Group => {
                    Ok(Operand::Float(x))
                }
                _ => Err(self.err(format!("`{word}` does not hold numbers with a fraction"))),
            };
        }
        match (v, info.holds) {
            ("true" | "True", Holds::Bool) => return Ok(Operand::Bool(true)),
            ("false" | "False", Holds::Bool) => return Ok(Operand::Bool(false)),
            _ => {}
        }
        if let Holds::Int { enum_id: Some(e) } = info.holds
            && let Some(def) = program.enums.get(e as usize)
        {
            if let Some((n, _)) = def.values.iter().find(|(_, name)| name == v) {
                return Ok(Operand::Int(*n as i128));
            }
            let names: Vec<&str> = def.values.iter().map(|(_, n)| n.as_str()).take(12).collect();
            return Err(self.err(format!(
                "`{v}` is not a value of {word} (enum {}: {})",
                def.name,
                names.join(" ")
            )));
        }
        let wants = match info.holds {
            Holds::Bool => "true or false",
            Holds::Text | Holds::Bytes => "a quoted string",
            _ => "a number",
        };
        Err(self.err(format!("`{v}` is not a value of {word}: it takes {wants}")))
    }
}
