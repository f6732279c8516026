//! Every key of the TUI as data: the `?` help draws this table and README's key table is
//! generated from it (a test holds them equal), so the two never disagree.

/// One line of the key table: the keys, where they apply (empty: everywhere), and what
/// they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub keys: &'static [&'static str],
    pub context: &'static str,
    pub what: &'static str,
}

const fn k(keys: &'static [&'static str], context: &'static str, what: &'static str) -> Key {
    Key { keys, context, what }
}

/// Every key, in the order the help lists them.
pub const KEYS: &[Key] = &[
    k(
        &["Tab", "Shift-Tab", "1–6"],
        "",
        "tabs: Packets Flows Reassembly Loss MTU Bits (or a click)",
    ),
    k(
        &["↑", "↓", "j", "k", "PgUp", "PgDn", "Home", "End"],
        "",
        "move in the list, the tree or a table (or the wheel, or a click)",
    ),
    k(&["t", "Enter", "→"], "Packets", "into the field tree"),
    k(&["Esc", "←"], "tree", "back to the list"),
    k(&["Space", "Enter"], "tree", "fold or unfold a group"),
    k(
        &["/"],
        "",
        "filter (see Display filters; the current filter is offered selected: Enter keeps it, typing replaces it, ← → End edit it; a refused filter stays in the prompt with the reason under it; a prompt holds 4,096 characters and says so)",
    ),
    k(&["F", "Ctrl-F"], "", "find: a filter over the list's columns"),
    k(&["n", "N"], "", "next / previous packet found"),
    k(&["]", "["], "", "next / previous malformed packet or CRC failure"),
    k(&["}", "{"], "", "next / previous sequence gap"),
    k(&["g"], "", "go to a frame number"),
    k(
        &["f"],
        "",
        "follow the selected packet's conversation (both directions)",
    ),
    k(&["a"], "tree", "filter on the selected field's value"),
    k(&["A"], "tree", "add the field's value to the filter (&&)"),
    k(
        &["y"],
        "",
        "copy the field's value (tree) or the packet's line (OSC 52: the terminal's clipboard, over ssh too)",
    ),
    k(&["Y"], "tree", "copy the field as JSON"),
    k(
        &["m"],
        "",
        "mark or unmark the selected packet (the selection stays)",
    ),
    k(&["M"], "", "clear every mark"),
    k(
        &["w"],
        "",
        "write the marked packets, else the shown ones, to pcapng (a reassembled packet brings its fragments): asks for the file, and again before replacing one",
    ),
    k(
        &["T"],
        "",
        "set or clear the time reference on the selected packet",
    ),
    k(&["d"], "", "time as relative, delta or absolute (UTC)"),
    k(&["c"], "Packets", "choose the list's columns"),
    k(
        &["+", "-"],
        "Packets",
        "give the list more / fewer rows (the field tree and bytes the rest)",
    ),
    k(
        &["<", ">"],
        "Packets",
        "move the line between the field tree and the bytes",
    ),
    k(
        &["r"],
        "",
        "reload the definition and dissect again, keeping the selection and the filter (a broken definition is refused with its file, line and column)",
    ),
    k(
        &["Enter"],
        "Flows",
        "the selected direction's packets (src A && dst B)",
    ),
    k(&["Shift-Enter", "b"], "Flows", "both directions' packets"),
    k(
        &["v"],
        "Flows",
        "the Streams view: per direction and message stream, analyze's stream and ack figures (- where not measured)",
    ),
    k(
        &["Enter"],
        "Streams",
        "the stream's messages, each with its frame, sequence and verdicts (new, gap N, late, dup; retransmission, spurious, naked, never_acked, rtt: dissect --brief's words), read in the background; Enter on one: its packet; Esc: back",
    ),
    k(
        &["p"],
        "Streams",
        "the stream's datagrams in the list (src A && dst B && its key); a verdict word added narrows them (&& retransmission)",
    ),
    k(
        &["Enter"],
        "Reassembly",
        "the packet's fragments and the packet they were put back into, its tree shown",
    ),
    k(
        &["s", "S"],
        "Flows, Reassembly",
        "sort by the next column / reverse",
    ),
    k(&["↑", "↓"], "Loss", "scroll the fragment counts"),
    k(&["←", "→"], "MTU", "choose the flow"),
    k(
        &["Enter"],
        "Bits",
        "a packet type's fields; on a field, the packets that have it, its bits highlighted",
    ),
    k(&["Esc", "←"], "Bits", "back to the packet types"),
    k(&["s", "S"], "Bits", "sort by bits, share or count / reverse"),
    k(&["?"], "", "this help: ↑ ↓ PgUp PgDn scroll, Esc or ? closes"),
    k(&["q", "Ctrl-C"], "", "quit"),
    k(
        &["←", "→", "Home", "End", "Ctrl-A", "Ctrl-E"],
        "prompts",
        "move the cursor",
    ),
    k(&["Ctrl-←", "Ctrl-→", "Alt-B", "Alt-F"], "prompts", "move by word"),
    k(
        &["Backspace", "Delete", "Ctrl-D"],
        "prompts",
        "delete a character",
    ),
    k(&["Ctrl-W", "Alt-Backspace", "Alt-D"], "prompts", "delete a word"),
    k(
        &["Ctrl-U", "Ctrl-K"],
        "prompts",
        "delete to the start / to the end",
    ),
    k(&["↑", "↓", "Ctrl-P", "Ctrl-N"], "prompts", "earlier entries"),
    k(&["Enter", "Esc"], "prompts", "apply / cancel"),
];

impl Key {
    /// The keys as the help shows them: `m M (Flows)`.
    pub fn label(&self) -> String {
        let keys = self.keys.join(" ");
        if self.context.is_empty() {
            keys
        } else {
            format!("{keys} ({})", self.context)
        }
    }
}

/// README's key table, generated from [`KEYS`].
pub fn markdown() -> String {
    let mut out = String::from("| keys | where | what they do |\n|---|---|---|\n");
    for key in KEYS {
        let keys: Vec<String> = key
            .keys
            .iter()
            .map(|k| format!("`{}`", k.replace('|', "\\|")))
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            keys.join(" "),
            key.context,
            key.what.replace('|', "\\|")
        ));
    }
    out
}
