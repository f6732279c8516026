//! The header layers of a frame as the packet tree and filters name them (`eth`, `vlan`,
//! `ip`, `udp`), on frames the generator writes: the decode crate cannot reach the
//! generator, so these checks live here.

use gpcap::decode::headers::{HeaderValue, has, layers, value};
use gpcap::decode::linktype::ETHERNET;
use gpcap::generate::{Link, ip_packets};

fn frame(vlan: Option<u16>, df: bool) -> Vec<u8> {
    let src = "10.0.0.1:40000".parse().unwrap();
    let dst = "10.0.1.1:50000".parse().unwrap();
    let ip = &ip_packets(src, dst, &[7u8; 27], 9, df, 1500)[0];
    Link::Ethernet { vlan }.frame(ip, false)
}

#[test]
fn ethernet_vlan_ipv4_udp_fields() {
    let f = frame(Some(42), true);
    let l = layers(ETHERNET, &f);
    let protos: Vec<&str> = l.iter().map(|l| l.proto).collect();
    assert_eq!(protos, ["eth", "vlan", "ip", "udp"]);
    assert_eq!(l[1].get("vlan.id"), Some(HeaderValue::Num(42)));
    assert_eq!(l[2].get("ip.ttl"), Some(HeaderValue::Num(64)));
    assert_eq!(l[2].get("ip.flags.df"), Some(HeaderValue::Num(1)));
    assert_eq!(l[2].get("ip.len"), Some(HeaderValue::Num(20 + 8 + 27)));
    assert_eq!(
        l[2].get("ip.src"),
        Some(HeaderValue::Ip("10.0.0.1".parse().unwrap()))
    );
    assert_eq!(l[3].get("udp.length"), Some(HeaderValue::Num(8 + 27)));
    assert_eq!(l[3].at, 14 + 4 + 20);
    assert_eq!(value(ETHERNET, &f, "udp.dstport"), Some(HeaderValue::Num(50000)));
    assert_eq!(
        value(ETHERNET, &frame(None, false), "ip.flags.df"),
        Some(HeaderValue::Num(0))
    );
    assert!(has(ETHERNET, &f, "vlan") && !has(ETHERNET, &frame(None, true), "vlan"));
}

#[test]
fn cut_headers_stop_the_walk_without_panic() {
    let f = frame(None, true);
    for n in 0..f.len() {
        let l = layers(ETHERNET, &f[..n]);
        assert!(l.iter().all(|l| l.at + l.len <= n));
    }
    assert!(layers(ETHERNET, &[]).is_empty());
}
