//! The socket calls the socket probes (and users' fixes) are made of: loopback
//! listeners, placeholders that bind but never listen, non-blocking connects
//! that wait on `poll(2)` to a deadline, and what a peer sees next.
//!
//! Nothing here sleeps: every wait is a `poll` on the socket with a deadline,
//! and a deadline passing is reported as such, never taken as an answer.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::base::errno::error_name;

/// How long a loopback handshake, reset or FIN may take before the wait counts
/// as failed. Generous: under load a loopback answer can take seconds; on an
/// idle machine it takes microseconds.
pub const LOOPBACK_DEADLINE: Duration = Duration::from_secs(10);

/// `127.0.0.1:port`.
pub fn loopback_v4(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// Options set on a socket before it binds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindOptions {
    /// `SO_REUSEADDR`.
    pub reuse_addr: bool,
    /// `SO_REUSEPORT`.
    pub reuse_port: bool,
    /// `IPV6_V6ONLY`, for an IPv6 socket: `Some(false)` makes a dual-stack socket.
    pub v6_only: Option<bool>,
}

/// A TCP socket bound to `addr` that never listens.
///
/// `bind(fd, addr, len)`—Bind a name to a socket. A bound TCP socket that has
/// not called `listen` is not in the kernel's listener lookup, so a SYN to its
/// address is answered with RST and `connect` fails with `ECONNREFUSED`, in
/// every process holding a copy. It still holds the address: a later bind of
/// the same port conflicts unless both set `SO_REUSEADDR` (see the bind-matrix
/// probe for what each OS allows).
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/bind.2.html>
/// - <https://man7.org/linux/man-pages/man7/socket.7.html> (`SO_REUSEADDR`, `SO_REUSEPORT`)
pub fn bound(addr: SocketAddr, opts: BindOptions) -> io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if opts.reuse_addr {
        sock.set_reuse_address(true)?;
    }
    if opts.reuse_port {
        crate::sys::set_reuse_port(&sock)?;
    }
    if let Some(only) = opts.v6_only {
        sock.set_only_v6(only)?;
    }
    sock.bind(&addr.into())?;
    Ok(sock)
}

/// A listening TCP socket on `addr` (port 0 picks one), like std's
/// `TcpListener::bind` (which also sets `SO_REUSEADDR` on Unix).
///
/// `listen(fd, backlog)`—Listen for connections on a socket. From then on the
/// kernel completes handshakes into the accept queue by itself: a client's
/// `connect` succeeds whether or not anyone will ever call `accept`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/listen.2.html>
pub fn listening(addr: SocketAddr, backlog: i32) -> io::Result<Socket> {
    let sock = bound(
        addr,
        BindOptions {
            reuse_addr: true,
            ..BindOptions::default()
        },
    )?;
    sock.listen(backlog)?;
    Ok(sock)
}

/// The address a socket is bound to.
pub fn local_addr(sock: &Socket) -> io::Result<SocketAddr> {
    sock.local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("not an inet socket"))
}

/// How a connect attempt ended.
#[derive(Debug)]
pub enum Connect {
    /// The handshake completed: the kernel queued the connection on a listener.
    Connected(Socket),
    /// The peer answered the SYN with RST (`ECONNREFUSED`).
    Refused,
    /// The handshake completed, then the peer reset the connection before the
    /// client looked (`ECONNRESET`: Linux's `tcp_reset` reports a reset in
    /// `SYN_SENT` as `ECONNREFUSED`, in a synchronized state as this).
    Reset,
}

/// Connects a fresh non-blocking client to `addr` and waits (on `poll`) until
/// the handshake completes or is refused. No answer by `deadline` is an error
/// of kind `TimedOut`.
pub fn connect_by(addr: SocketAddr, deadline: Instant) -> io::Result<Connect> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_nonblocking(true)?;
    match sock.connect(&addr.into()) {
        Ok(()) => return Ok(Connect::Connected(sock)),
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => return Ok(Connect::Refused),
        Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => return Ok(Connect::Reset),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    if !poll_by(&sock, libc::POLLOUT, deadline)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("connect to {addr}: no answer by the deadline"),
        ));
    }
    match sock.take_error()? {
        None => Ok(Connect::Connected(sock)),
        Some(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Ok(Connect::Refused),
        Some(e) if e.raw_os_error() == Some(libc::ECONNRESET) => Ok(Connect::Reset),
        Some(e) => Err(e),
    }
}

/// Waits until `fd` reports one of `events` (or an error or hang-up), at most
/// until `deadline`: `Ok(false)` when the deadline passed first.
pub fn poll_by(fd: impl AsFd, events: libc::c_short, deadline: Instant) -> io::Result<bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match crate::sys::poll_one(fd.as_fd(), events, left) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(false) if left.is_zero() => return Ok(false),
            Ok(false) => continue,
            Ok(true) => return Ok(true),
        }
    }
}

/// What a connected socket reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerSees {
    /// Bytes: the other end is open and wrote.
    Data,
    /// End of file: the other end sent FIN.
    Eof,
    /// `ECONNRESET`: the other end sent RST.
    Reset,
    /// Nothing by the deadline.
    Nothing,
}

impl PeerSees {
    /// The value recorded in tallies.
    pub fn id(self) -> &'static str {
        match self {
            PeerSees::Data => "data",
            PeerSees::Eof => "eof",
            PeerSees::Reset => "reset",
            PeerSees::Nothing => "nothing-by-deadline",
        }
    }
}

/// Waits (to `deadline`) for `sock` to become readable, then reads one byte.
/// Any error other than a reset is returned, not classified.
pub fn next_read(sock: &Socket, deadline: Instant) -> io::Result<PeerSees> {
    if !poll_by(sock, libc::POLLIN, deadline)? {
        return Ok(PeerSees::Nothing);
    }
    let mut buf = [0u8; 1];
    loop {
        match (&*sock).read(&mut buf) {
            Ok(0) => return Ok(PeerSees::Eof),
            Ok(_) => return Ok(PeerSees::Data),
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => return Ok(PeerSees::Reset),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("read: {} ({e})", error_name(&e)),
                ));
            }
        }
    }
}

/// Accepts every connection already queued on a listener and closes each:
/// the count accepted. The listener is left non-blocking.
pub fn drain(listener: &Socket) -> io::Result<usize> {
    listener.set_nonblocking(true)?;
    let mut n = 0;
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                drop(conn);
                n += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A connected loopback TCP pair: `(client, server)`, both blocking.
pub fn connected_pair(deadline: Instant) -> io::Result<(Socket, Socket)> {
    let listener = listening(loopback_v4(0), 1)?;
    let client = match connect_by(local_addr(&listener)?, deadline)? {
        Connect::Connected(c) => c,
        Connect::Refused | Connect::Reset => {
            return Err(io::Error::other("a fresh listener refused or reset"));
        }
    };
    client.set_nonblocking(false)?;
    if !poll_by(&listener, libc::POLLIN, deadline)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the connection never reached the accept queue",
        ));
    }
    let (server, _) = listener.accept()?;
    server.set_nonblocking(false)?;
    Ok((client, server))
}

/// The kernel's state for the TCP connection `local` → `peer`, as the kernel
/// names it (`ESTABLISHED`, `FIN_WAIT1`, …): `None` when the table has no
/// such connection; `Err(Unsupported)` where this crate has no reader for the
/// OS's connection table (Linux reads `/proc/net/tcp`).
///
/// The state changes inside the syscall that sends a FIN (`close` of the last
/// reference, or `shutdown(SHUT_WR)`), so reading it right after the call
/// says whether that call sent one; no waiting is involved.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_net.5.html> (`/proc/net/tcp`)
/// - Linux `include/net/tcp_states.h` (state numbers)
pub fn tcp_state(local: SocketAddr, peer: SocketAddr) -> io::Result<Option<&'static str>> {
    crate::sys::tcp_state(local, peer)
}

// ---------------------------------------------------------------------------
// Unix-domain stream sockets at paths.

/// The longest Unix-domain socket path this crate builds, in bytes. macOS's
/// `sockaddr_un.sun_path` holds 104 bytes and Linux's 108, each including the
/// terminating NUL, so 103 is the most that binds on both: a longer path fails
/// with `EINVAL` or `ENAMETOOLONG` (or, through some wrappers, is truncated
/// and binds somewhere else).
///
/// # References
/// - unix(7), "Address format": <https://man7.org/linux/man-pages/man7/unix.7.html>
/// - Apple `sys/un.h`: `char sun_path[104]`
pub const SOCKET_PATH_MAX: usize = 103;

/// Bytes a socket folder's own name and a socket's file name may take below
/// the root: `/fdw-<pid>-<n>` and `/<name>`, with room for a 7-digit pid and
/// names of up to 24 bytes.
const SOCKET_ROOM: usize = 50;

/// The root that socket folders go under, given the preferred one (the
/// scratch root or `TMPDIR`): the preferred root when a path built under it
/// stays within [`SOCKET_PATH_MAX`], else `/tmp`, which is short on every
/// Unix. macOS's per-user `TMPDIR` (`/var/folders/xx/<30 chars>/T/`, 49 bytes;
/// 57 once resolved under `/private`) leaves little room for anything more.
pub fn socket_root(preferred: &Path) -> PathBuf {
    if preferred.is_absolute() && preferred.as_os_str().len() + SOCKET_ROOM <= SOCKET_PATH_MAX {
        preferred.to_owned()
    } else {
        PathBuf::from("/tmp")
    }
}

/// `dir/name`, refused (`InvalidInput`) when it would be longer than
/// [`SOCKET_PATH_MAX`] bytes, or when `name` is not one plain file name.
pub fn socket_path_in(dir: &Path, name: &str) -> io::Result<PathBuf> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("socket name {name:?} is not a plain file name"),
        ));
    }
    let path = dir.join(name);
    let len = path.as_os_str().len();
    if len > SOCKET_PATH_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path {} is {len} bytes; at most {SOCKET_PATH_MAX} bind on every OS",
                path.display()
            ),
        ));
    }
    Ok(path)
}

/// A short private folder (mode 0700) for Unix-domain sockets, removed with
/// everything in it on drop. It sits under the scratch root when paths there
/// are short enough, else under `/tmp` (see [`socket_root`]); every path it
/// hands out is at most [`SOCKET_PATH_MAX`] bytes.
#[derive(Debug)]
pub struct SocketDir {
    dir: PathBuf,
}

impl SocketDir {
    /// Creates `<root>/fdw-<pid>-<n>` exclusively, the root chosen from
    /// `$FDWINDOW_SCRATCH` or the system temp folder by [`socket_root`].
    pub fn new() -> io::Result<SocketDir> {
        let preferred = std::env::var_os(crate::base::scratch::SCRATCH_ENV)
            .map_or_else(std::env::temp_dir, PathBuf::from);
        SocketDir::new_in(&socket_root(&preferred))
    }

    /// Creates a fresh private folder directly under `root`.
    pub fn new_in(root: &Path) -> io::Result<SocketDir> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        // The pid keeps names unique across processes, the counter within one;
        // a stale folder from a killed run with a recycled pid is skipped.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let pid = std::process::id();
        for _ in 0..1000 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = root.join(format!("fdw-{pid}-{n}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(SocketDir { dir }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("create {}: {e}", dir.display()),
                    ));
                }
            }
        }
        Err(io::Error::other(format!(
            "no free socket folder name under {}",
            root.display()
        )))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A socket path in the folder (see [`socket_path_in`]).
    pub fn path(&self, name: &str) -> io::Result<PathBuf> {
        socket_path_in(&self.dir, name)
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Unix-domain stream socket bound at `path` that never listens.
///
/// `bind(2)` creates the socket file; a `connect(2)` to it fails with
/// `ECONNREFUSED` while the socket is not listening (Linux
/// `unix_stream_connect` wants `TCP_LISTEN`; xnu `unp_connect` wants
/// `SO_ACCEPTCONN`), in every process holding a copy. The file stays after
/// close: a later bind at the path fails with `EADDRINUSE` until it is unlinked.
///
/// # References
/// - unix(7): <https://man7.org/linux/man-pages/man7/unix.7.html>
/// - bind(2): <https://man7.org/linux/man-pages/man2/bind.2.html>
pub fn unix_bound(path: &Path) -> io::Result<Socket> {
    let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    sock.bind(&socket2::SockAddr::unix(path)?)?;
    Ok(sock)
}

/// A Unix-domain stream socket listening at `path`, as std's
/// `UnixListener::bind` makes it (bind, then `listen`).
pub fn unix_listening(path: &Path, backlog: i32) -> io::Result<Socket> {
    let sock = unix_bound(path)?;
    sock.listen(backlog)?;
    Ok(sock)
}

/// How a connect to a Unix-domain socket path ended.
#[derive(Debug)]
pub enum UnixConnect {
    /// A listener took the connection into its queue.
    Connected(Socket),
    /// `ECONNREFUSED`: a socket file with no listener behind it (never
    /// listened, shut down, or every copy closed), or (macOS) a full backlog.
    Refused,
    /// `ENOENT`: no file at the path at all. Code that expects a dead
    /// listener to *refuse* sees a different error here.
    Missing,
}

impl UnixConnect {
    /// The value recorded in tallies: `connected`, `ECONNREFUSED`, `ENOENT`.
    pub fn id(&self) -> &'static str {
        match self {
            UnixConnect::Connected(_) => "connected",
            UnixConnect::Refused => "ECONNREFUSED",
            UnixConnect::Missing => "ENOENT",
        }
    }
}

/// Connects a fresh non-blocking Unix-domain stream client to `path`. A local
/// connect is decided inside the call; should it answer `EINPROGRESS`, this
/// waits on `poll` to `deadline` and fails with `TimedOut` after it. A full
/// backlog (`EAGAIN` on Linux) is an error: the probes queue one connection.
pub fn unix_connect(path: &Path, deadline: Instant) -> io::Result<UnixConnect> {
    let addr = socket2::SockAddr::unix(path)?;
    let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    sock.set_nonblocking(true)?;
    let err = match sock.connect(&addr) {
        Ok(()) => return Ok(UnixConnect::Connected(sock)),
        Err(e) => e,
    };
    match err.raw_os_error() {
        Some(libc::ECONNREFUSED) => Ok(UnixConnect::Refused),
        Some(libc::ENOENT) => Ok(UnixConnect::Missing),
        Some(libc::EINPROGRESS) => {
            if !poll_by(&sock, libc::POLLOUT, deadline)? {
                return Err(timed_out(path));
            }
            match sock.take_error()? {
                None => Ok(UnixConnect::Connected(sock)),
                Some(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Ok(UnixConnect::Refused),
                Some(e) => Err(e),
            }
        }
        _ => Err(io::Error::new(
            err.kind(),
            format!(
                "connect to {}: {} ({err})",
                path.display(),
                error_name(&err)
            ),
        )),
    }
}

fn timed_out(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("connect to {}: no answer by the deadline", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soon() -> Instant {
        Instant::now() + LOOPBACK_DEADLINE
    }

    #[test]
    fn unlistened_refuses_listening_accepts() {
        let _serial = crate::test_serial();
        let placeholder = bound(loopback_v4(0), BindOptions::default()).unwrap();
        let addr = local_addr(&placeholder).unwrap();
        assert!(matches!(
            connect_by(addr, soon()).unwrap(),
            Connect::Refused
        ));
        let listener = listening(loopback_v4(0), 4).unwrap();
        let addr = local_addr(&listener).unwrap();
        assert!(matches!(
            connect_by(addr, soon()).unwrap(),
            Connect::Connected(_)
        ));
        assert!(poll_by(&listener, libc::POLLIN, soon()).unwrap());
        assert_eq!(drain(&listener).unwrap(), 1);
    }

    #[test]
    fn peer_sees_data_then_eof() {
        let _serial = crate::test_serial();
        let (client, server) = connected_pair(soon()).unwrap();
        std::io::Write::write_all(&mut &client, b"x").unwrap();
        assert_eq!(next_read(&server, soon()).unwrap(), PeerSees::Data);
        drop(client);
        assert_eq!(next_read(&server, soon()).unwrap(), PeerSees::Eof);
    }

    /// macOS's per-user TMPDIR, as the shell sees it (49 bytes) and resolved
    /// under /private (57 bytes).
    const MAC_TMPDIR: &str = "/var/folders/xx/abcdefghijklmnopqrstuvwxyz0123/T/";
    const MAC_TMPDIR_RESOLVED: &str = "/private/var/folders/xx/abcdefghijklmnopqrstuvwxyz0123/T/";

    #[test]
    fn socket_paths_never_exceed_the_macos_limit() {
        assert_eq!(MAC_TMPDIR.len(), 49);
        assert_eq!(MAC_TMPDIR_RESOLVED.len(), 57);
        let longest_name = "n".repeat(24);
        let folder = format!("fdw-{}-{}", 9_999_999, 99_999);
        for (tmpdir, expect_own) in [(MAC_TMPDIR, true), (MAC_TMPDIR_RESOLVED, false)] {
            let root = socket_root(Path::new(tmpdir));
            assert_eq!(root == Path::new(tmpdir), expect_own, "{tmpdir}");
            let path = socket_path_in(&root.join(&folder), &longest_name).unwrap();
            assert!(
                path.as_os_str().len() <= SOCKET_PATH_MAX,
                "{}",
                path.display()
            );
        }
        assert_eq!(socket_root(Path::new("relative")), Path::new("/tmp"));
        // A path over the limit is refused, never built.
        let long = Path::new("/").join("d".repeat(SOCKET_PATH_MAX - 2));
        let err = socket_path_in(&long, "s").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            socket_path_in(&long, "").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            socket_path_in(Path::new("/tmp"), "a/b").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            socket_path_in(Path::new("/"), &"x".repeat(SOCKET_PATH_MAX - 1))
                .unwrap()
                .as_os_str()
                .len(),
            SOCKET_PATH_MAX
        );
    }

    #[test]
    fn socket_dir_is_private_short_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = SocketDir::new().unwrap();
        let path = dir.path("s").unwrap();
        assert!(path.as_os_str().len() <= SOCKET_PATH_MAX);
        let mode = std::fs::metadata(dir.dir()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let listener = unix_listening(&path, 4).unwrap();
        let kept = dir.dir().to_owned();
        drop(dir);
        assert!(!kept.exists());
        drop(listener);
    }

    #[test]
    fn unix_connect_tells_refused_from_missing() {
        let _serial = crate::test_serial();
        let dir = SocketDir::new().unwrap();
        let path = dir.path("s").unwrap();
        assert!(matches!(
            unix_connect(&path, soon()).unwrap(),
            UnixConnect::Missing
        ));
        let placeholder = unix_bound(&path).unwrap();
        assert!(matches!(
            unix_connect(&path, soon()).unwrap(),
            UnixConnect::Refused
        ));
        drop(placeholder);
        // The socket file outlives the socket: a stale path refuses.
        assert!(matches!(
            unix_connect(&path, soon()).unwrap(),
            UnixConnect::Refused
        ));
        std::fs::remove_file(&path).unwrap();
        let listener = unix_listening(&path, 4).unwrap();
        let UnixConnect::Connected(client) = unix_connect(&path, soon()).unwrap() else {
            panic!("a listener refused");
        };
        assert!(poll_by(&listener, libc::POLLIN, soon()).unwrap());
        drop((client, listener));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tcp_state_follows_the_fin() {
        let _serial = crate::test_serial();
        let (client, server) = connected_pair(soon()).unwrap();
        let (local, peer) = (local_addr(&client).unwrap(), local_addr(&server).unwrap());
        assert_eq!(tcp_state(local, peer).unwrap(), Some("ESTABLISHED"));
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let state = tcp_state(local, peer).unwrap();
        assert!(
            matches!(state, Some("FIN_WAIT1" | "FIN_WAIT2")),
            "{state:?}"
        );
        assert_eq!(tcp_state(local, loopback_v4(1)).unwrap(), None);
    }
}
