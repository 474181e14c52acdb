//! How both movers set up a TCP connection: no Nagle delay, and a peer that stops answering (its
//! node lost, the network cut for good) noticed in about 90 s instead of never, while a cut of
//! half a minute is ridden out (the kernel retransmits, the transfer goes on).

use std::net::TcpStream;
use std::time::Duration;

use rustix::net::sockopt;

/// Idle time before the first keepalive probe, the time between probes, and how many go
/// unanswered before the connection is given up (20 + 7 × 10 s).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(20);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_PROBES: u32 = 7;
/// Longest data sent may stay unacknowledged before the connection is given up.
const UNACKNOWLEDGED: Duration = Duration::from_secs(90);

/// Tunes `tcp` as the module says; a setting the kernel refuses is left at its default.
pub(super) fn tune(tcp: &TcpStream) {
    let _ = tcp.set_nodelay(true);
    let _ = sockopt::set_socket_keepalive(tcp, true);
    let _ = sockopt::set_tcp_keepidle(tcp, KEEPALIVE_IDLE);
    let _ = sockopt::set_tcp_keepintvl(tcp, KEEPALIVE_INTERVAL);
    let _ = sockopt::set_tcp_keepcnt(tcp, KEEPALIVE_PROBES);
    let _ = sockopt::set_tcp_user_timeout(tcp, UNACKNOWLEDGED.as_millis() as u32);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuned_connection_probes_an_idle_peer_and_gives_up_unacknowledged_data() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        tune(&tcp);
        assert!(tcp.nodelay().unwrap());
        assert!(sockopt::socket_keepalive(&tcp).unwrap());
        assert_eq!(sockopt::tcp_keepidle(&tcp).unwrap(), KEEPALIVE_IDLE);
        assert_eq!(sockopt::tcp_keepintvl(&tcp).unwrap(), KEEPALIVE_INTERVAL);
        assert_eq!(sockopt::tcp_keepcnt(&tcp).unwrap(), KEEPALIVE_PROBES);
        assert_eq!(sockopt::tcp_user_timeout(&tcp).unwrap(), 90_000);
    }
}
