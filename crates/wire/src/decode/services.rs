//! Well-known UDP services by port, as Wireshark names the protocols it finds on them:
//! traffic that is not the game's reads `DNS` or `QUIC` rather than `udp`.

/// (port, the service's name), by port.
const SERVICES: &[(u16, &str)] = &[
    (53, "DNS"),
    (67, "DHCP"),
    (68, "DHCP"),
    (69, "TFTP"),
    (123, "NTP"),
    (137, "NBNS"),
    (138, "NetBIOS datagram"),
    (161, "SNMP"),
    (162, "SNMP trap"),
    (443, "QUIC"),
    (500, "ISAKMP"),
    (514, "Syslog"),
    (520, "RIP"),
    (546, "DHCPv6"),
    (547, "DHCPv6"),
    (853, "DNS over QUIC"),
    (1194, "OpenVPN"),
    (1812, "RADIUS"),
    (1813, "RADIUS accounting"),
    (1900, "SSDP"),
    (3478, "STUN"),
    (3479, "STUN"),
    (4500, "IPsec NAT-T"),
    (4789, "VXLAN"),
    (5060, "SIP"),
    (5349, "STUN over DTLS"),
    (5353, "mDNS"),
    (5355, "LLMNR"),
    (6081, "Geneve"),
    (19302, "STUN"),
    (51820, "WireGuard"),
];

/// The well-known service of a datagram between these ports: the lower port's when both
/// are known (a client's ephemeral port is the higher one).
pub fn service(a: u16, b: u16) -> Option<&'static str> {
    let name = |p: u16| {
        SERVICES
            .binary_search_by_key(&p, |(q, _)| *q)
            .ok()
            .map(|i| SERVICES[i].1)
    };
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    name(lo).or_else(|| name(hi))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ports_name_services() {
        assert!(
            super::SERVICES.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted by port"
        );
        assert_eq!(super::service(53124, 53), Some("DNS"));
        assert_eq!(super::service(443, 61000), Some("QUIC"));
        assert_eq!(super::service(3478, 3478), Some("STUN"));
        assert_eq!(super::service(40000, 50000), None);
    }
}
