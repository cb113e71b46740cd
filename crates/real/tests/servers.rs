//! The real servers as `tenure real` starts them (Debian's etcd-server and zookeeperd;
//! `.ci/run` installs them, so these tests require them and never skip): every socket
//! each one listens on is on loopback, and a panic while one runs leaves neither its
//! process nor its data directory behind (the owning values' drops run as the panic
//! unwinds).

// Real processes: what these tests are about.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::Path;
use std::time::Duration;
use tenure_real::servers::{free_port, on_path, ServerProc, TempDir};
use tenure_real::{etcd_server, zk_server};

/// The local addresses of the TCP sockets process `pid` listens on, as /proc/net/tcp
/// and tcp6 write them (hex address:port).
fn listening(pid: u32) -> Vec<String> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's fds")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")?
                .strip_suffix(']')
                .map(String::from)
        })
        .collect();
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address rem_address st ... inode (the 10th field)
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                out.push(f[1].to_string());
            }
        }
    }
    out
}

/// Whether a /proc/net address is 127.0.0.1 (IPv4, or IPv4-mapped IPv6) or ::1.
fn is_loopback(addr: &str) -> bool {
    let host = addr.split(':').next().unwrap_or("");
    host == "0100007F"
        || host == "0000000000000000FFFF00000100007F"
        || host == "00000000000000000000000001000000"
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie whose parent has not reaped it yet is dead too.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Starts the server as `tenure real` does, checks its sockets, then panics with it
/// running; afterwards its process and data directory are gone.
fn start_check_and_panic(
    what: &str,
    program: &Path,
    args: impl Fn(u16, &Path) -> Vec<std::ffi::OsString>,
    ready: impl Fn(u16) -> bool,
    sockets: usize,
) {
    let log_dir = TempDir::new(&format!("{what}-test-log")).unwrap();
    let mut seen: Option<(u32, std::path::PathBuf, Vec<String>)> = None;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let data = TempDir::new(what).unwrap();
        let port = free_port().unwrap();
        let mut p = ServerProc::new(
            what.into(),
            program.to_path_buf(),
            args(port, data.path()),
            log_dir.path().join("server.log"),
        );
        p.spawn().unwrap();
        p.wait_ready(Duration::from_secs(30), || ready(port))
            .unwrap();
        let pid = p.pid().unwrap();
        seen = Some((pid, data.path().to_path_buf(), listening(pid)));
        panic!("a panic while the server runs");
    }));
    // The deliberate panic, not an assertion that failed inside.
    let payload = unwound.expect_err("it panicked");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"a panic while the server runs")
    );
    let (pid, data, addrs) = seen.expect("the server ran");
    assert_eq!(addrs.len(), sockets, "{what} listens on {addrs:?}");
    for a in &addrs {
        assert!(is_loopback(a), "{what} listens on {a}, not on loopback");
    }
    assert!(gone(pid), "{what} (pid {pid}) outlived the panic");
    assert!(!data.exists(), "{} outlived the panic", data.display());
}

#[test]
fn etcd_listens_on_loopback_only_and_a_panic_leaves_nothing() {
    let etcd = on_path(etcd_server::PROGRAM).expect("etcd (Debian's etcd-server)");
    let peer = free_port().unwrap();
    start_check_and_panic(
        "etcd",
        &etcd,
        |port, dir| etcd_server::args("n0", port, peer, dir),
        etcd_server::ready,
        // the client URL (metrics too) and the peer URL
        2,
    );
}

#[test]
fn zookeeper_listens_on_loopback_only_and_a_panic_leaves_nothing() {
    let java = zk_server::java().expect("java and zookeeper.jar (Debian's zookeeperd)");
    start_check_and_panic(
        "zookeeper",
        &java,
        zk_server::args,
        zk_server::ready,
        // the client port: no AdminServer, no JMX port, no quorum ports
        1,
    );
}

/// The negative control of the socket check: a server told to listen on every address
/// is caught.
#[test]
fn the_socket_check_sees_a_wildcard_listener() {
    let l = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let addrs = listening(std::process::id());
    let port = format!("{:04X}", l.local_addr().unwrap().port());
    let mine: Vec<&String> = addrs.iter().filter(|a| a.ends_with(&port)).collect();
    assert_eq!(mine.len(), 1, "{addrs:?}");
    assert!(!is_loopback(mine[0]));
}
