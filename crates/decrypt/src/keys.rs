//! Keys for encrypted protocols, from the command line, a key log, the environment or the
//! definition's directory. Keys are untrusted input: every mistake names the file, line
//! and column; no key is ever put in an error message.

use std::net::SocketAddr;
use std::path::Path;

/// A 32-byte key (netcode's private key and packet keys).
pub type Key = [u8; 32];

/// Connections a key log may name; past it the log is refused (bounded memory: 83 bytes
/// a connection).
pub const MAX_KEYLOG_ENTRIES: usize = 1 << 20;

/// Connections one client address may have in a key log (each is tried on a packet
/// whose MAC fails under the one in force).
pub const MAX_KEYS_PER_CLIENT: usize = 64;

/// The two packet keys of one connection.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ConnectionKeys {
    pub client_to_server: Key,
    pub server_to_client: Key,
}

impl std::fmt::Debug for ConnectionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionKeys(…)")
    }
}

/// A client address in 19 bytes: the IP version, the address (IPv4 in the first 4),
/// the port; an IPv4 address and its IPv6-mapped form are two clients.
pub type Client = [u8; 19];

/// `a` as a [`Client`].
pub fn client(a: &SocketAddr) -> Client {
    let mut c = [0u8; 19];
    match a {
        SocketAddr::V4(v) => {
            c[0] = 4;
            c[1..5].copy_from_slice(&v.ip().octets());
        }
        SocketAddr::V6(v) => {
            c[0] = 6;
            c[1..17].copy_from_slice(&v.ip().octets());
        }
    }
    c[17..].copy_from_slice(&a.port().to_be_bytes());
    c
}

/// A logged connection: its client and keys.
pub type Logged = (Client, ConnectionKeys);

/// A key log's connections, 83 bytes each, sorted by client address and, for one
/// address, in the order the log names them: the order its connections came in. A
/// connection's number is its place here.
#[derive(Clone, Default)]
pub struct KeyLog {
    entries: Vec<(Client, ConnectionKeys)>,
}

impl KeyLog {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a connection of `client` after the ones the log has for it.
    pub fn push(&mut self, client: SocketAddr, keys: ConnectionKeys) {
        let c = self::client(&client);
        let at = self.entries.partition_point(|(x, _)| *x <= c);
        self.entries.insert(at, (c, keys));
    }

    /// Many connections at once, each after the ones the log has for its client.
    fn extend(&mut self, more: Vec<(Client, ConnectionKeys)>) {
        // Taken whole when there is nothing yet: a copy would hold the log twice.
        if self.entries.is_empty() {
            self.entries = more;
        } else {
            self.entries.extend(more);
        }
        // Stable: one client's connections keep their order.
        self.entries.sort_by_key(|(c, _)| *c);
    }

    /// The connections of `client`, in order, and the number of the first.
    pub fn of(&self, client: &SocketAddr) -> (u32, &[(Client, ConnectionKeys)]) {
        let c = self::client(client);
        let from = self.entries.partition_point(|(x, _)| *x < c);
        let to = from + self.entries[from..].partition_point(|(x, _)| *x == c);
        (from as u32, &self.entries[from..to])
    }

    /// The most connections one client has.
    fn most_per_client(&self) -> (usize, Option<Client>) {
        let mut best = (0, None);
        let mut run = 0;
        for (i, (c, _)) in self.entries.iter().enumerate() {
            run = if i > 0 && self.entries[i - 1].0 == *c {
                run + 1
            } else {
                1
            };
            if run > best.0 {
                best = (run, Some(*c));
            }
        }
        best
    }
}

/// What an observer holds: the server's private key and connections' keys by client
/// address.
#[derive(Clone, Default)]
pub struct Secrets {
    pub private_key: Option<Key>,
    pub connections: KeyLog,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Secrets {{ private_key: {}, connections: {} }}",
            if self.private_key.is_some() { "set" } else { "none" },
            self.connections.len()
        )
    }
}

impl Secrets {
    pub fn is_empty(&self) -> bool {
        self.private_key.is_none() && self.connections.is_empty()
    }
}

/// Hex digits to bytes; `None` for an odd count or a non-hex digit.
pub fn hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    let s = s.strip_prefix("0x").unwrap_or(s);
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Bytes as lowercase hex (for `--show-keys`).
pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A 32-byte key from hex, or why not (never quoting the text: it may be a key).
pub fn key_from_hex(s: &str) -> Result<Key, String> {
    let t = s.trim();
    if let Some((i, c)) = t
        .strip_prefix("0x")
        .unwrap_or(t)
        .char_indices()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    {
        return Err(format!("character {} is not a hex digit ({c:?})", i + 1));
    }
    let b = hex(t).ok_or_else(|| "an odd number of hex digits".to_string())?;
    b.as_slice()
        .try_into()
        .map_err(|_| format!("the key is {} bytes; a key is 32 (64 hex digits)", b.len()))
}

/// `--key HEX|@FILE`: the key itself, or a file holding it (hex text, or 32 raw bytes).
pub fn private_key(arg: &str, what: &str) -> Result<Key, String> {
    match arg.strip_prefix('@') {
        None => key_from_hex(arg).map_err(|e| format!("{what}: {e}")),
        Some(path) => key_file(Path::new(path)),
    }
}

/// A key file: 64 hex digits (whitespace and `#` comment lines ignored) or 32 raw bytes.
pub fn key_file(path: &Path) -> Result<Key, String> {
    let name = path.display();
    let bytes = read_bounded(path, 64 << 10).map_err(|e| format!("{name}: cannot read key file: {e}"))?;
    let hex_text =
        |b: &[u8]| std::str::from_utf8(b).is_ok_and(|t| t.trim().len() == 64 && key_from_hex(t).is_ok());
    if bytes.len() == 32 && !hex_text(&bytes) {
        // 32 raw bytes, even when they happen to be text (every byte below 0x80).
        return Ok(bytes.as_slice().try_into().unwrap_or([0; 32]));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        format!(
            "{name}: not hex text nor 32 raw bytes (byte offset {}, {} bytes)",
            e.valid_up_to(),
            bytes.len()
        )
    })?;
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if found.is_some() {
            return Err(format!("{name}:{}: a key file holds one key", i + 1));
        }
        found = Some(key_from_hex(l).map_err(|e| format!("{name}:{}: {e}", i + 1))?);
    }
    found.ok_or_else(|| format!("{name}: no key in the file"))
}

fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut b = Vec::new();
    std::fs::File::open(path)?.take(limit + 1).read_to_end(&mut b)?;
    if b.len() as u64 > limit {
        return Err(std::io::Error::other(format!("larger than {} KiB", limit >> 10)));
    }
    Ok(b)
}

/// Reads a key log into `secrets`: one connection a line,
/// `NETCODE <client ip:port> <client_to_server_key> <server_to_client_key>` (hex), and
/// `NETCODE_PRIVATE_KEY <key>`; blank lines and `#` comments are skipped. Read a line at
/// a time (at most 256 MiB, 4 KiB a line): the log is never held whole.
pub fn keylog(path: &Path, secrets: &mut Secrets) -> Result<(), String> {
    use std::io::{BufRead, Read};
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: cannot read key log: {e}"))?;
    let mut r = std::io::BufReader::new(file.take(256 << 20));
    let mut log = Parsed::default();
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        let got = (&mut r)
            .take(4 << 10)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{name}: cannot read key log: {e}"))?;
        if got == 0 {
            break;
        }
        n += 1;
        if got == 4 << 10 && line.last() != Some(&b'\n') {
            return Err(format!("{name}:{n}: a line longer than 4 KiB"));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|e| format!("{name}:{n}: not UTF-8 text (byte {})", e.valid_up_to() + 1))?;
        log.line(n, text.trim_end_matches(['\n', '\r']))
            .map_err(|(line, col, e)| format!("{name}:{line}:{col}: {e}"))?;
    }
    if r.into_inner().limit() == 0 {
        return Err(format!("{name}: larger than 256 MiB"));
    }
    if log.connections.is_empty() && log.private_key.is_none() {
        return Err(format!(
            "{name}: the key log holds no key (no NETCODE or NETCODE_PRIVATE_KEY line)"
        ));
    }
    log.into(secrets).map_err(|e| format!("{name}: {e}"))
}

/// The key log's text; an error is (line, column, why).
pub fn parse_keylog(text: &str, secrets: &mut Secrets) -> Result<(), (usize, usize, String)> {
    let mut log = Parsed::default();
    for (i, line) in text.lines().enumerate() {
        log.line(i + 1, line)?;
    }
    log.into(secrets).map_err(|e| (0, 0, e))
}

/// A key log's lines read so far.
#[derive(Default)]
struct Parsed {
    private_key: Option<Key>,
    connections: Vec<(Client, ConnectionKeys)>,
}

impl Parsed {
    /// Line `n` (1-based); an error is (line, column, why).
    fn line(&mut self, n: usize, line: &str) -> Result<(), (usize, usize, String)> {
        let l = line.trim_end();
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            return Ok(());
        }
        let mut words = Vec::with_capacity(4);
        let mut col = 0;
        for w in l.split(' ') {
            if !w.is_empty() {
                words.push((col + 1, w));
            }
            col += w.len() + 1;
        }
        let at = |k: usize| words.get(k).map_or(l.len() + 1, |w| w.0);
        let key = |k: usize| -> Result<Key, (usize, usize, String)> {
            let w = words.get(k).ok_or((n, at(k), "a key is missing".to_string()))?;
            key_from_hex(w.1).map_err(|e| (n, w.0, e))
        };
        match words[0].1 {
            "NETCODE" => {
                let addr = words
                    .get(1)
                    .ok_or((n, at(1), "the client's address is missing".to_string()))?;
                let client: SocketAddr = addr.1.parse().map_err(|_| {
                    (
                        n,
                        addr.0,
                        format!(
                            "`{}` is not an address and port (127.0.0.1:41000, [::1]:41000)",
                            addr.1
                        ),
                    )
                })?;
                let keys = ConnectionKeys {
                    client_to_server: key(2)?,
                    server_to_client: key(3)?,
                };
                if words.len() > 4 {
                    return Err((n, words[4].0, "more than an address and two keys".into()));
                }
                if self.connections.len() >= MAX_KEYLOG_ENTRIES {
                    return Err((n, 1, format!("more than {MAX_KEYLOG_ENTRIES} connections")));
                }
                self.connections.push((self::client(&client), keys));
            }
            "NETCODE_PRIVATE_KEY" => {
                self.private_key = Some(key(1)?);
                if words.len() > 2 {
                    return Err((n, words[2].0, "more than one key".into()));
                }
            }
            other => {
                return Err((
                    n,
                    words[0].0,
                    format!("unknown label `{other}`: lines start with NETCODE or NETCODE_PRIVATE_KEY"),
                ));
            }
        }
        Ok(())
    }

    /// Into `secrets`, every connection of a client kept, in the log's order.
    fn into(self, secrets: &mut Secrets) -> Result<(), String> {
        if let Some(k) = self.private_key {
            secrets.private_key = Some(k);
        }
        if secrets.connections.len() + self.connections.len() > MAX_KEYLOG_ENTRIES {
            return Err(format!("more than {MAX_KEYLOG_ENTRIES} connections"));
        }
        secrets.connections.extend(self.connections);
        let (most, who) = secrets.connections.most_per_client();
        if most > MAX_KEYS_PER_CLIENT {
            let who = who.map(|c| address(&c)).unwrap_or_default();
            return Err(format!(
                "{who} is named {most} times; a client has at most {MAX_KEYS_PER_CLIENT} connections"
            ));
        }
        Ok(())
    }
}

/// A [`Client`] as written.
fn address(c: &Client) -> String {
    let port = u16::from_be_bytes([c[17], c[18]]);
    match c[0] {
        4 => SocketAddr::from(([c[1], c[2], c[3], c[4]], port)).to_string(),
        _ => {
            let ip: [u8; 16] = c[1..17].try_into().unwrap_or([0; 16]);
            SocketAddr::from((ip, port)).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_log_lines_and_their_mistakes() {
        let k = "00".repeat(32);
        let mut s = Secrets::default();
        parse_keylog(
            &format!("# c\n\nNETCODE 127.0.0.1:41000 {k} {}\n", "11".repeat(32)),
            &mut s,
        )
        .unwrap();
        let (_, c) = s
            .connections
            .of(&"127.0.0.1:41000".parse::<SocketAddr>().unwrap());
        assert_eq!(c[0].1.server_to_client, [0x11; 32]);
        let e = parse_keylog("NETCODE 127.0.0.1 00 00", &mut s).unwrap_err();
        assert_eq!((e.0, e.1), (1, 9));
        let e = parse_keylog(&format!("NETCODE 1.2.3.4:5 {k} abc"), &mut s).unwrap_err();
        assert_eq!((e.0, e.1), (1, 84));
        assert!(e.2.contains("odd"), "{}", e.2);
        let e = parse_keylog(&format!("NETCODE 1.2.3.4:5 {k}"), &mut s).unwrap_err();
        assert!(e.2.contains("missing"));
        let e = parse_keylog("  SSL 1 2", &mut s).unwrap_err();
        assert_eq!((e.0, e.1), (1, 3));
        assert!(key_from_hex(&"ab".repeat(31)).unwrap_err().contains("31 bytes"));
        assert!(
            key_from_hex(&format!("{}zz", "ab".repeat(31)))
                .unwrap_err()
                .contains("63")
        );
        assert!(private_key("0x", "--key").is_err());
    }
}
