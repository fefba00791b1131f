//! Observes which second bind of a port succeeds while a first socket holds
//! it, by address family, specific vs wildcard address, bound vs listening,
//! and `SO_REUSEADDR` / `SO_REUSEPORT` (set on both sockets or neither).
//!
//! Method: for each case a fresh first socket binds port 0 (and listens, if
//! the case says so); a second socket with the same options then binds that
//! port on the specific address and, separately, on the wildcard. Each cell
//! is `ok` or the errno name `bind(2)` returned. Loopback only; every socket
//! is closed before the next case.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use fdwindow::harness::{Probe, Settings};
use fdwindow::report::Table;
use fdwindow_fix::base::errno::{error_name, outcome_name};
use fdwindow_fix::base::scratch::Scratch;
use fdwindow_fix::base::sockets::{
    BindOptions, LOOPBACK_DEADLINE, SocketDir, bound, local_addr, unix_bound, unix_connect,
    unix_listening,
};

pub static PROBE: Probe = Probe {
    hazard: "bind-matrix",
    about: "Observes which second bind of a port succeeds while a first socket holds it (IPv4, IPv6, dual stack; specific or wildcard; bound or listening; SO_REUSEADDR, SO_REUSEPORT), and of a Unix-domain socket path (in use, stale after close, unlinked first).",
    trials: 1,
    race: Duration::from_millis(0),
    arms: &[],
    observe: Some(observe),
};

/// Runs this probe with `args` (those after `fdwindow probe bind-matrix`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

const ABOUT: &str = "A first socket binds port 0 on the case's address (and listens, if the case \
says so); a second socket then binds that port on the specific address, or on the wildcard. Options \
are set on both sockets or neither. Families: `v4` binds 127.0.0.1 / 0.0.0.0; `v6` binds ::1 / :: \
with IPV6_V6ONLY on; `dual` has an IPv4 first socket (127.0.0.1 / 0.0.0.0) and an IPv6 dual-stack \
second socket (IPV6_V6ONLY off) on ::ffff:127.0.0.1 / ::. Each cell is `ok` or the errno of the \
second bind. Platform difference (platform-facts §6): Linux's socket(7) lets SO_REUSEADDR sockets \
share a port \"except when there is an active listening socket bound to the address\", so on Linux a \
listening 127.0.0.1:P blocks 0.0.0.0:P even with SO_REUSEADDR on both, while a merely bound one \
does not. On macOS and the BSDs SO_REUSEADDR is reported to let a wildcard bind sit beside a \
specific one, the more specific socket getting the traffic (reported, not yet measured here; \
whether it holds while the specific socket listens is open; source: \
stackoverflow.com/questions/14388706). So a port picked free on 127.0.0.1 proves nothing about \
0.0.0.0, and the OSes differ in how a later wildcard bind beside it behaves.";

#[derive(Clone, Copy)]
enum Family {
    V4,
    V6,
    Dual,
}

impl Family {
    fn id(self) -> &'static str {
        match self {
            Family::V4 => "v4",
            Family::V6 => "v6",
            Family::Dual => "dual",
        }
    }

    /// The first socket's address and `IPV6_V6ONLY` setting.
    fn first(self, wildcard: bool) -> (IpAddr, Option<bool>) {
        match (self, wildcard) {
            (Family::V4 | Family::Dual, false) => (Ipv4Addr::LOCALHOST.into(), None),
            (Family::V4 | Family::Dual, true) => (Ipv4Addr::UNSPECIFIED.into(), None),
            (Family::V6, false) => (Ipv6Addr::LOCALHOST.into(), Some(true)),
            (Family::V6, true) => (Ipv6Addr::UNSPECIFIED.into(), Some(true)),
        }
    }

    /// The second socket's address and `IPV6_V6ONLY` setting.
    fn second(self, wildcard: bool) -> (IpAddr, Option<bool>) {
        match (self, wildcard) {
            (Family::V4 | Family::V6, w) => self.first(w),
            (Family::Dual, false) => (Ipv4Addr::LOCALHOST.to_ipv6_mapped().into(), Some(false)),
            (Family::Dual, true) => (Ipv6Addr::UNSPECIFIED.into(), Some(false)),
        }
    }
}

#[derive(Clone, Copy)]
enum Reuse {
    Neither,
    Addr,
    Port,
}

impl Reuse {
    fn id(self) -> &'static str {
        match self {
            Reuse::Neither => "none",
            Reuse::Addr => "reuseaddr",
            Reuse::Port => "reuseport",
        }
    }

    fn options(self, v6_only: Option<bool>) -> BindOptions {
        BindOptions {
            reuse_addr: matches!(self, Reuse::Addr),
            reuse_port: matches!(self, Reuse::Port),
            v6_only,
        }
    }
}

/// One cell: the second bind's result, or why the first could not be made.
fn second_bind(
    family: Family,
    first_wild: bool,
    listen: bool,
    reuse: Reuse,
    second_wild: bool,
) -> String {
    let (ip, v6_only) = family.first(first_wild);
    let first = match bound(SocketAddr::new(ip, 0), reuse.options(v6_only)) {
        Ok(s) => s,
        Err(e) => return format!("first bind: {}", error_name(&e)),
    };
    if listen && let Err(e) = first.listen(16) {
        return format!("first listen: {}", error_name(&e));
    }
    let port = match local_addr(&first) {
        Ok(a) => a.port(),
        Err(e) => return format!("getsockname: {}", error_name(&e)),
    };
    let (ip, v6_only) = family.second(second_wild);
    outcome_name(&bound(SocketAddr::new(ip, port), reuse.options(v6_only)))
}

const UNIX_ABOUT: &str = "A first Unix-domain stream socket binds a path (in a short private \
folder) and listens or only binds; the case says what happens to it and to the path; a second \
socket then binds the same path, and listens if that worked; a fresh client then connects to the \
path. Cells are `ok` or an errno name; `connect` is `connected`, `ECONNREFUSED` or `ENOENT`. The \
socket file outlives the socket (unix(7): it \"persists in the filesystem\" until unlinked), so a \
closed listener's path stays taken (EADDRINUSE) and refuses connections; the usual remedy is to \
unlink before bind. Unlinking a path whose listener is alive (or alive in a child's copy) frees the \
name but not the listener: whoever had it connected keeps it, and a new connect gets ENOENT until \
someone binds there again.";

/// How the first socket at a Unix-domain path is left before the second binds.
#[derive(Clone, Copy)]
enum UnixCase {
    /// Listening, path untouched.
    Listening,
    /// Bound, never listened.
    Bound,
    /// Listened, then closed; the file stays.
    StaleAfterClose,
    /// Listened, closed, then the path unlinked before the second bind.
    UnlinkBeforeBind,
    /// Listening, and the path unlinked while it listens.
    UnlinkedWhileListening,
}

impl UnixCase {
    const ALL: [UnixCase; 5] = [
        UnixCase::Listening,
        UnixCase::Bound,
        UnixCase::StaleAfterClose,
        UnixCase::UnlinkBeforeBind,
        UnixCase::UnlinkedWhileListening,
    ];

    fn id(self) -> &'static str {
        match self {
            UnixCase::Listening => "path in use (listening)",
            UnixCase::Bound => "path in use (bound, not listening)",
            UnixCase::StaleAfterClose => "stale path after close",
            UnixCase::UnlinkBeforeBind => "unlink before bind",
            UnixCase::UnlinkedWhileListening => "unlinked while the first listens",
        }
    }
}

/// One Unix-domain row: the second bind, and what a connect to the path gets.
fn unix_row(dir: &SocketDir, n: usize, case: UnixCase) -> Vec<String> {
    let mut row = vec![case.id().to_owned()];
    let path = match dir.path(&format!("s{n}")) {
        Ok(p) => p,
        Err(e) => {
            row.extend([format!("path: {}", error_name(&e)), "—".into()]);
            return row;
        }
    };
    let first = match case {
        UnixCase::Bound => unix_bound(&path),
        _ => unix_listening(&path, 4),
    };
    let first = match first {
        Ok(s) => s,
        Err(e) => {
            row.extend([format!("first bind: {}", error_name(&e)), "—".into()]);
            return row;
        }
    };
    let mut keep = Some(first);
    if matches!(case, UnixCase::StaleAfterClose | UnixCase::UnlinkBeforeBind) {
        keep = None;
    }
    if matches!(
        case,
        UnixCase::UnlinkBeforeBind | UnixCase::UnlinkedWhileListening
    ) && let Err(e) = std::fs::remove_file(&path)
    {
        row.extend([format!("unlink: {}", error_name(&e)), "—".into()]);
        return row;
    }
    let second = unix_bound(&path).and_then(|s| s.listen(4).map(|()| s));
    row.push(outcome_name(&second));
    let deadline = std::time::Instant::now() + LOOPBACK_DEADLINE;
    row.push(match unix_connect(&path, deadline) {
        Ok(c) => c.id().to_owned(),
        Err(e) => format!("connect: {}", error_name(&e)),
    });
    drop((keep, second));
    row
}

fn unix_table() -> Table {
    let mut table = Table {
        id: "unix-path-bind".into(),
        about: UNIX_ABOUT.into(),
        columns: vec![
            "case".into(),
            "second bind".into(),
            "connect to the path".into(),
        ],
        rows: Vec::new(),
        problem: None,
    };
    match SocketDir::new() {
        Ok(dir) => {
            table.rows = UnixCase::ALL
                .iter()
                .enumerate()
                .map(|(n, &case)| unix_row(&dir, n, case))
                .collect()
        }
        Err(e) => table.problem = Some(format!("broken: make the socket folder: {e}")),
    }
    table
}

fn observe(_: &Scratch, _: Settings) -> Vec<Table> {
    let mut rows = Vec::new();
    for family in [Family::V4, Family::V6, Family::Dual] {
        for (first_wild, first_id) in [(false, "specific"), (true, "wildcard")] {
            for (listen, state) in [(false, "bound"), (true, "listening")] {
                for reuse in [Reuse::Neither, Reuse::Addr, Reuse::Port] {
                    let key = format!("{}/{first_id}/{state}/{}", family.id(), reuse.id());
                    let cells = [false, true].map(|second_wild| {
                        second_bind(family, first_wild, listen, reuse, second_wild)
                    });
                    let [specific, wildcard] = cells;
                    rows.push(vec![key, specific, wildcard]);
                }
            }
        }
    }
    vec![
        Table {
            id: "second-bind".into(),
            about: ABOUT.into(),
            columns: vec![
                "family/first/state/options".into(),
                "second bind: specific".into(),
                "second bind: wildcard".into(),
            ],
            rows,
            problem: None,
        },
        unix_table(),
    ]
}
