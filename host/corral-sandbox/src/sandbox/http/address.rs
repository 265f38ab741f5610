//! Which IP addresses are internal: the ranges an allowed host name must not
//! resolve to unless the allow-list names that address itself or the policy
//! opts in (`[http] allow_private_networks = true`). Without this check, a
//! listed name whose DNS an attacker controls reaches the host's loopback,
//! the LAN, or a cloud metadata service (169.254.169.254).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The internal range `ip` falls in, named for messages, or `None` for a
/// public address.
///
/// IPv4: unspecified and "this network" (0.0.0.0/8), loopback (127.0.0.0/8),
/// private (10/8, 172.16/12, 192.168/16), carrier-grade NAT (100.64/10),
/// link-local (169.254/16, which holds cloud metadata services), multicast
/// (224/4) and broadcast. IPv6: unspecified, loopback, unique-local
/// (fc00::/7), link-local (fe80::/10), multicast (ff00::/8), and IPv4-mapped
/// or IPv4-compatible addresses by the IPv4 address they carry.
pub fn internal_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified (0.0.0.0/8)",
        (127, _) => "loopback (127.0.0.0/8)",
        (10, _) => "private (10.0.0.0/8)",
        (172, 16..=31) => "private (172.16.0.0/12)",
        (192, 168) => "private (192.168.0.0/16)",
        (100, 64..=127) => "carrier-grade NAT (100.64.0.0/10)",
        (169, 254) => "link-local (169.254.0.0/16, cloud metadata)",
        (224..=239, _) => "multicast (224.0.0.0/4)",
        _ if ip == Ipv4Addr::BROADCAST => "broadcast",
        _ => return None,
    })
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return internal_v4(v4).map(|_| "IPv4-mapped internal address (::ffff:0:0/96)");
    }
    let segments = ip.segments();
    // IPv4-compatible (::a.b.c.d, deprecated) carries an IPv4 address too.
    if segments[..6].iter().all(|s| *s == 0) && !ip.is_loopback() && !ip.is_unspecified() {
        let [.., c, d] = segments;
        let v4 = Ipv4Addr::new((c >> 8) as u8, c as u8, (d >> 8) as u8, d as u8);
        return internal_v4(v4).map(|_| "IPv4-compatible internal address (::/96)");
    }
    Some(match segments[0] {
        _ if ip.is_unspecified() => "unspecified (::)",
        _ if ip.is_loopback() => "loopback (::1)",
        s if s & 0xfe00 == 0xfc00 => "unique-local (fc00::/7)",
        s if s & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        s if s & 0xff00 == 0xff00 => "multicast (ff00::/8)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(ip: &str) -> Option<&'static str> {
        internal_range(ip.parse().expect("ip"))
    }

    #[test]
    fn internal_ranges_are_refused_and_public_ones_pass() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
        ] {
            assert!(range(ip).is_some(), "{ip} is internal");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(range(ip), None, "{ip} is public");
        }
        assert!(
            range("169.254.169.254")
                .expect("metadata")
                .contains("metadata")
        );
    }
}
