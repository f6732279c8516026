//! The frame's headers as the first layers of a field tree, in Wireshark's words: a
//! title per header (`Internet Protocol Version 4, Src: 10.0.1.1, Dst: 10.0.0.1`) and
//! its fields with their bits (`.1.. .... = Don't fragment: Set`).

use gpcap_wire::decode::headers::{HeaderField, HeaderLayer, HeaderValue};
use std::fmt::Write;

/// A MAC address as Wireshark writes it.
pub fn mac(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The header's title line.
pub fn title(l: &HeaderLayer) -> String {
    let v = |n: &str| l.get(n).map(|v| plain(&v)).unwrap_or_default();
    match l.proto {
        "eth" => format!("Ethernet II, Src: {}, Dst: {}", v("eth.src"), v("eth.dst")),
        "vlan" => format!(
            "802.1Q Virtual LAN, PRI: {}, DEI: {}, ID: {}",
            v("vlan.priority"),
            v("vlan.dei"),
            v("vlan.id")
        ),
        "sll" => "Linux cooked capture".to_string(),
        "null" => format!("Null/Loopback, Family: {}", v("null.family")),
        "ip" => format!(
            "Internet Protocol Version 4, Src: {}, Dst: {}",
            v("ip.src"),
            v("ip.dst")
        ),
        "ipv6" => format!(
            "Internet Protocol Version 6, Src: {}, Dst: {}",
            v("ipv6.src"),
            v("ipv6.dst")
        ),
        "udp" => format!(
            "User Datagram Protocol, Src Port: {}, Dst Port: {}",
            v("udp.srcport"),
            v("udp.dstport")
        ),
        other => other.to_string(),
    }
}

fn plain(v: &HeaderValue) -> String {
    match v {
        HeaderValue::Num(n) => n.to_string(),
        HeaderValue::Mac(m) => mac(*m),
        HeaderValue::Ip(ip) => ip.to_string(),
    }
}

/// A field's value as Wireshark's tree says it: flags set or not, protocols and
/// EtherTypes by name, checksums and identifications in hex, lengths in bytes.
pub fn value_text(f: &HeaderField) -> String {
    let HeaderValue::Num(n) = f.value else {
        return plain(&f.value);
    };
    let ethertype = |n: u64| match n {
        0x0800 => format!("IPv4 (0x{n:04x})"),
        0x86dd => format!("IPv6 (0x{n:04x})"),
        0x8100 => format!("802.1Q Virtual LAN (0x{n:04x})"),
        0x88a8 => format!("802.1ad (0x{n:04x})"),
        0x0806 => format!("ARP (0x{n:04x})"),
        _ => format!("0x{n:04x}"),
    };
    match f.name {
        "ip.flags.rb" | "ip.flags.df" | "ip.flags.mf" | "vlan.dei" => {
            if n == 1 { "Set" } else { "Not set" }.to_string()
        }
        "ip.flags" => {
            let names: Vec<&str> = [(4, "Reserved"), (2, "Don't fragment"), (1, "More fragments")]
                .into_iter()
                .filter(|(b, _)| n & b != 0)
                .map(|(_, w)| w)
                .collect();
            match names.is_empty() {
                true => format!("0x{n:x}"),
                false => format!("0x{n:x}, {}", names.join(", ")),
            }
        }
        "eth.type" | "vlan.etype" | "sll.etype" => ethertype(n),
        "ip.proto" | "ipv6.nxt" => match n {
            17 => format!("UDP ({n})"),
            6 => format!("TCP ({n})"),
            1 => format!("ICMP ({n})"),
            58 => format!("ICMPv6 ({n})"),
            44 => format!("Fragment Header for IPv6 ({n})"),
            _ => n.to_string(),
        },
        "ip.hdr_len" => format!("{n} bytes ({})", n / 4),
        "ip.id" | "ip.checksum" | "udp.checksum" => format!("0x{n:04x} ({n})"),
        "ip.dsfield" | "ipv6.tclass" => format!("0x{n:02x}"),
        "ipv6.flow" => format!("0x{n:05x}"),
        _ => n.to_string(),
    }
}

/// A field's bits, Wireshark's way: the bytes it touches, its own bits shown and the
/// others dots (`.1.. ....`); none for whole bytes wider than 32 bits (addresses).
pub fn bit_pattern(frame: &[u8], f: &HeaderField) -> Option<String> {
    if f.bits > 32 || matches!(f.value, HeaderValue::Mac(_) | HeaderValue::Ip(_)) {
        return None;
    }
    let (first, last) = (f.bit / 8 * 8, (f.bit + f.bits as usize).div_ceil(8) * 8);
    let mut out = String::new();
    for b in first..last {
        if b > first && b % 4 == 0 {
            out.push(' ');
        }
        let inside = (f.bit..f.bit + f.bits as usize).contains(&b);
        out.push(match (inside, frame.get(b / 8)) {
            (true, Some(byte)) => {
                if byte >> (7 - b % 8) & 1 == 1 {
                    '1'
                } else {
                    '0'
                }
            }
            _ => '.',
        });
    }
    Some(out)
}

/// The field's tree line, without indentation.
pub fn field_line(frame: &[u8], f: &HeaderField) -> String {
    let value = value_text(f);
    match bit_pattern(frame, f) {
        Some(bits) => format!("{bits} = {}: {value}", f.label),
        None => format!("{}: {value}", f.label),
    }
}

/// Every header of the frame: its title, then its fields indented, each with its place
/// in the frame (`dissect`'s tree).
pub fn write_layers(out: &mut String, layers: &[HeaderLayer], frame: &[u8]) {
    for l in layers {
        let _ = writeln!(out, "{}", title(l));
        for f in &l.fields {
            let unit = if f.bits == 1 { "bit" } else { "bits" };
            let _ = writeln!(
                out,
                "    {}  [frame bit {}, {} {unit}]",
                field_line(frame, f),
                f.bit,
                f.bits
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_in_wireshark_words() {
        let frame = [0x40u8, 0x00];
        let df = HeaderField {
            name: "ip.flags.df",
            label: "Don't fragment",
            bit: 1,
            bits: 1,
            value: HeaderValue::Num(1),
        };
        assert_eq!(field_line(&frame, &df), ".1.. .... = Don't fragment: Set");
        let off = HeaderField {
            name: "ip.frag_offset",
            label: "Fragment Offset",
            bit: 3,
            bits: 13,
            value: HeaderValue::Num(0),
        };
        assert_eq!(bit_pattern(&frame, &off).unwrap(), "...0 0000 0000 0000");
    }
}
