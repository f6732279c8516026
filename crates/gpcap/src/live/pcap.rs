//! Live capture through libpcap (feature `libpcap`): `--filter` expressions, and the
//! systems without AF_PACKET (macOS, the BSDs, Windows with Npcap).

use super::{Interface, LiveError, LiveOptions, Start};
use gpcap_wire::capture::Frame;
use std::time::{Duration, Instant};

pub(super) fn interfaces() -> Result<Vec<Interface>, String> {
    let list = pcap::Device::list().map_err(|e| e.to_string())?;
    Ok(list
        .into_iter()
        .map(|d| Interface {
            addresses: d.addresses.iter().map(|a| a.addr.to_string()).collect(),
            name: d.name,
            description: d.desc,
        })
        .collect())
}

fn classify(iface: &str, e: pcap::Error) -> LiveError {
    let message = e.to_string();
    let lower = message.to_lowercase();
    if lower.contains("permission") || lower.contains("not permitted") {
        LiveError::Permission {
            iface: iface.into(),
            message,
        }
    } else if lower.contains("no such device")
        || lower.contains("doesn't exist")
        || lower.contains("does not exist")
    {
        LiveError::NoSuchInterface {
            iface: iface.into(),
            available: interfaces()
                .map(|v| v.into_iter().map(|i| i.name).collect())
                .unwrap_or_default(),
        }
    } else {
        LiveError::Other {
            iface: iface.into(),
            message,
        }
    }
}

pub(super) fn run(o: LiveOptions, s: Start) {
    let Start {
        mut feeder,
        ready,
        shared,
    } = s;
    let opened = pcap::Capture::from_device(o.iface.as_str())
        .map(|c| {
            // Not immediate mode: libpcap then uses TPACKET_V3, whose blocks pack frames
            // by their length; a block is handed over when full or after the timeout.
            c.promisc(false)
                .snaplen(o.snaplen)
                .timeout(10)
                .immediate_mode(false)
                .buffer_size(o.buffer)
                .precision(pcap::Precision::Nano)
        })
        .and_then(|c| c.open());
    let mut cap = match opened {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(classify(&o.iface, e)));
            return;
        }
    };
    if let Some(f) = &o.bpf
        && let Err(e) = cap.filter(f, true)
    {
        let _ = ready.send(Err(LiveError::Filter {
            filter: f.clone(),
            message: e.to_string(),
        }));
        return;
    }
    // Non-blocking: a blocked read would never see the stop flag on a quiet interface.
    let mut cap = match cap.setnonblock() {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(classify(&o.iface, e)));
            return;
        }
    };
    let linktype = cap.get_datalink().0;
    let _ = ready.send(Ok(linktype));
    let mut last_stats = Instant::now();
    let publish = |cap: &mut pcap::Capture<pcap::Active>, captured: u64| {
        if let (Ok(st), Ok(mut shared)) = (cap.stats(), shared.stats.lock()) {
            shared.kernel_received = st.received as u64;
            shared.kernel_dropped = st.dropped as u64;
            shared.if_dropped = st.if_dropped as u64;
            shared.captured = captured;
        }
    };
    let mut polls = 0u32;
    while !shared.stopping() {
        match cap.next_packet() {
            Ok(p) => {
                let ts = p.header.ts;
                // Nanosecond precision was asked for: tv_usec holds nanoseconds. (The casts
                // matter where time_t and suseconds_t are 32 bits.)
                #[allow(clippy::unnecessary_cast)]
                let ts_ns = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_usec as i64;
                let f = Frame {
                    number: 0,
                    ts_ns,
                    linktype,
                    interface: 0,
                    origlen: p.header.len,
                    offset: 0,
                    data: p.data,
                };
                if !feeder.push(f) {
                    break;
                }
                polls = polls.wrapping_add(1);
                if !polls.is_multiple_of(1024) {
                    continue;
                }
            }
            Err(pcap::Error::TimeoutExpired) => {
                if !feeder.flush() {
                    break;
                }
                wait_readable(&cap, Duration::from_millis(20));
            }
            Err(e) => {
                shared.fail(e.to_string());
                break;
            }
        }
        if last_stats.elapsed() > Duration::from_millis(200) {
            last_stats = Instant::now();
            publish(&mut cap, feeder.captured);
        }
    }
    feeder.flush();
    publish(&mut cap, feeder.captured);
}

/// Sleeps until the kernel hands over a block of frames (or `at_most` passes, to see the
/// stop flag): one wakeup per block instead of polling.
fn wait_readable(cap: &pcap::Capture<pcap::Active>, at_most: Duration) {
    use std::os::fd::AsRawFd;
    #[cfg(unix)]
    super::poll_readable(cap.as_raw_fd(), at_most);
}
