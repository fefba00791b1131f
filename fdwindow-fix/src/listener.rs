//! Retiring a TCP listener so that no copy of it keeps accepting, and a
//! placeholder socket that holds a port without ever accepting.
//!
//! Closing a listener stops it only when the last copy goes: a child's copy
//! keeps completing handshakes into the backlog, connections nobody will
//! serve. On Linux `shutdown(SHUT_RD)` or `SHUT_RDWR` stops the listening
//! socket itself, for every copy, and resets the queued connections
//! (net/ipv4/af_inet.c `inet_shutdown`). On macOS `shutdown` on a listener
//! answers ENOTCONN and changes nothing (xnu `soshutdown`); there, bind
//! without listening until the socket is really needed ([`Placeholder`]), or
//! run the code that retires listeners where nothing else spawns.
//!
//! Unix-domain listeners at a path behave alike (measured by the
//! `unix-listener-survival` probe): a child's copy keeps taking connections at
//! the path. On Linux `shutdown(SHUT_RD)` marks the socket so that
//! `unix_stream_connect` refuses (net/unix/af_unix.c checks `RCV_SHUTDOWN`);
//! [`retire_unix`] does that and removes the path. [`UnixPlaceholder`] holds a
//! path without ever listening, so every copy refuses. Unlinking the path
//! alone turns a connect into `ENOENT`, not `ECONNREFUSED`: code that probes a
//! dead listener for a refusal must accept both.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use crate::base::sockets::{BindOptions, bound, unix_bound};

/// What [`retire`] achieved.
#[derive(Debug)]
pub enum Retired {
    /// `shutdown` stopped the listening socket itself: every copy refuses.
    EveryCopy,
    /// `shutdown` was refused (on macOS, ENOTCONN): only this descriptor was
    /// closed, and a child's copy may still accept.
    ThisCopyOnly(io::Error),
}

/// `shutdown(fd, SHUT_RDWR)` then close: stops a listener for every copy
/// where the kernel allows it, and says so.
///
/// ```
/// use fdwindow_fix::listener::{retire, Retired};
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// match retire(listener) {
///     Retired::EveryCopy => {}
///     Retired::ThisCopyOnly(why) => eprintln!("copies may still accept: {why}"),
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn retire(listener: TcpListener) -> Retired {
    match rustix::net::shutdown(&listener, rustix::net::Shutdown::Both) {
        Ok(()) => Retired::EveryCopy,
        Err(e) => Retired::ThisCopyOnly(e.into()),
    }
}

/// A TCP socket bound to an address but never listening: it holds the port,
/// and no copy of it ever completes a connection. On Linux a SYN to it gets
/// a reset (the client sees `ECONNREFUSED`); xnu drops the SYN without an
/// answer (its tcpcb is `TCPS_CLOSED`, bsd/netinet/tcp_input.c), so a client
/// on macOS waits until its own connect timeout: give clients a timeout.
/// Call [`Placeholder::listen`] when the server is ready, so the port was
/// never free for someone else in between.
///
/// Backed by `listener-survival bound-unlistened` on Linux and macOS. As a
/// way to *pick* a port that a later, separate bind reuses
/// (`port-pick pick-unlistened`) it is backed on Linux only: there a socket
/// that never listened does not block a `SO_REUSEADDR` bind of the same
/// address. On macOS a child's copy of the placeholder still holds the exact
/// address and port, and xnu's `in_pcbbind` refuses any later bind of them
/// with `EADDRINUSE`, listening or not, unless both sockets set
/// `SO_REUSEPORT`: keep the placeholder and call [`Placeholder::listen`] on
/// it rather than dropping it and binding the port again.
///
/// # References
/// - xnu `bsd/netinet/in_pcb.c` (`in_pcbbind`: the exact-address lookup and
///   `(reuseport & t->inp_socket->so_options) == 0` give `EADDRINUSE`)
/// - <https://man7.org/linux/man-pages/man7/socket.7.html> (`SO_REUSEADDR`)
#[derive(Debug)]
pub struct Placeholder {
    socket: socket2::Socket,
}

impl Placeholder {
    /// Binds a close-on-exec TCP socket with SO_REUSEADDR (as std's listener
    /// has); port 0 picks a free port.
    ///
    /// ```
    /// let placeholder = fdwindow_fix::listener::Placeholder::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = placeholder.local_addr()?;
    /// // Bound, not listening: refused (Linux) or no answer (macOS).
    /// let wait = std::time::Duration::from_secs(1);
    /// assert!(std::net::TcpStream::connect_timeout(&addr, wait).is_err());
    /// let listener = placeholder.listen(128)?;
    /// assert_eq!(listener.local_addr()?, addr);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(addr: SocketAddr) -> io::Result<Placeholder> {
        let opts = BindOptions {
            reuse_addr: true,
            ..BindOptions::default()
        };
        Ok(Placeholder {
            socket: bound(addr, opts)?,
        })
    }

    /// The bound address (with the port the kernel picked).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("not an IP socket"))
    }

    /// Starts listening on the held port.
    pub fn listen(self, backlog: i32) -> io::Result<TcpListener> {
        self.socket.listen(backlog)?;
        Ok(self.socket.into())
    }
}

/// Retires a Unix-domain listener bound at `path`: `shutdown(SHUT_RDWR)`, then
/// close, then unlink `path` (a missing file is fine). Where the shutdown took
/// ([`Retired::EveryCopy`]) every copy refuses from then on; where it was
/// refused (macOS answers ENOTCONN on a listener) a child's copy may still
/// take connections, but nobody can reach it by the path any more: a connect
/// gets `ENOENT`. An unlink error other than a missing file is returned.
///
/// ```
/// use fdwindow_fix::listener::{retire_unix, Retired};
/// let dir = fdwindow_fix::base::sockets::SocketDir::new()?;
/// let path = dir.path("server")?;
/// let listener = std::os::unix::net::UnixListener::bind(&path)?;
/// match retire_unix(listener, &path)? {
///     Retired::EveryCopy => {}
///     Retired::ThisCopyOnly(why) => eprintln!("copies may still accept: {why}"),
/// }
/// assert!(!path.exists());
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # References
/// - shutdown(2): <https://man7.org/linux/man-pages/man2/shutdown.2.html>
/// - unix(7) (the socket file persists until unlinked): <https://man7.org/linux/man-pages/man7/unix.7.html>
pub fn retire_unix(listener: UnixListener, path: &Path) -> io::Result<Retired> {
    let retired = match rustix::net::shutdown(&listener, rustix::net::Shutdown::Both) {
        Ok(()) => Retired::EveryCopy,
        Err(e) => Retired::ThisCopyOnly(e.into()),
    };
    drop(listener);
    match std::fs::remove_file(path) {
        Ok(()) => Ok(retired),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(retired),
        Err(e) => Err(e),
    }
}

/// A Unix-domain stream socket bound at a path that never listens: it holds
/// the path (a second bind there fails with `EADDRINUSE`), and every copy of
/// it refuses connections with `ECONNREFUSED`. A stale socket file for a test
/// fixture ("a dead server was here") made this way cannot be revived by a
/// fork's copy, as a dropped listener can. Call [`UnixPlaceholder::listen`]
/// when the server is ready. Backed by `unix-listener-survival
/// bound-unlistened`.
#[derive(Debug)]
pub struct UnixPlaceholder {
    socket: socket2::Socket,
    path: PathBuf,
}

impl UnixPlaceholder {
    /// Binds a close-on-exec Unix-domain stream socket at `path` (at most
    /// [`crate::base::sockets::SOCKET_PATH_MAX`] bytes, so it binds on macOS too).
    ///
    /// ```
    /// use fdwindow_fix::listener::UnixPlaceholder;
    /// let dir = fdwindow_fix::base::sockets::SocketDir::new()?;
    /// let path = dir.path("owner.sock")?;
    /// let placeholder = UnixPlaceholder::bind(&path)?;
    /// assert!(std::os::unix::net::UnixStream::connect(&path).is_err()); // bound, not listening
    /// let listener = placeholder.listen(128)?;
    /// assert!(std::os::unix::net::UnixStream::connect(&path).is_ok());
    /// drop(listener);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(path: &Path) -> io::Result<UnixPlaceholder> {
        if path.as_os_str().len() > crate::base::sockets::SOCKET_PATH_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is longer than {} bytes",
                    path.display(),
                    crate::base::sockets::SOCKET_PATH_MAX
                ),
            ));
        }
        Ok(UnixPlaceholder {
            socket: unix_bound(path)?,
            path: path.to_owned(),
        })
    }

    /// The path it is bound at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts listening at the held path.
    pub fn listen(self, backlog: i32) -> io::Result<UnixListener> {
        self.socket.listen(backlog)?;
        Ok(std::os::fd::OwnedFd::from(self.socket).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::child::HeldChild;
    use std::net::TcpStream;

    #[cfg(target_os = "linux")]
    #[test]
    fn retire_stops_the_copy_a_held_child_keeps() {
        let _serial = crate::test_serial();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let held = HeldChild::hold().unwrap();
        let retired = retire(listener);
        assert!(matches!(retired, Retired::EveryCopy), "{retired:?}");
        assert!(
            TcpStream::connect(addr).is_err(),
            "a retired listener's copy accepted"
        );
        held.release().unwrap();
    }

    #[test]
    fn placeholder_refuses_while_a_child_holds_a_copy() {
        let _serial = crate::test_serial();
        let p = Placeholder::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = p.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let held = HeldChild::hold().unwrap();
        // Refused on Linux; on macOS the SYN is dropped, so the wait is bounded.
        assert!(
            TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(1)).is_err(),
            "a bound, unlistened socket accepted"
        );
        let l = p.listen(8).unwrap();
        assert!(TcpStream::connect(addr).is_ok());
        drop(l);
        held.release().unwrap();
    }

    #[test]
    fn unix_placeholder_refuses_while_a_child_holds_a_copy() {
        use crate::base::sockets::{SocketDir, UnixConnect, unix_connect};
        let _serial = crate::test_serial();
        let deadline = || std::time::Instant::now() + crate::base::sockets::LOOPBACK_DEADLINE;
        let dir = SocketDir::new().unwrap();
        let path = dir.path("p").unwrap();
        let p = UnixPlaceholder::bind(&path).unwrap();
        let held = HeldChild::hold().unwrap();
        assert!(matches!(
            unix_connect(&path, deadline()).unwrap(),
            UnixConnect::Refused
        ));
        drop(p);
        assert!(matches!(
            unix_connect(&path, deadline()).unwrap(),
            UnixConnect::Refused
        ));
        held.release().unwrap();
        assert!(UnixPlaceholder::bind(&dir.dir().join("x".repeat(120))).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn retire_unix_shuts_down_and_unlinks() {
        use crate::base::sockets::{SocketDir, UnixConnect, unix_connect};
        let _serial = crate::test_serial();
        let dir = SocketDir::new().unwrap();
        let path = dir.path("l").unwrap();
        let listener = UnixListener::bind(&path).unwrap();
        let held = HeldChild::hold().unwrap();
        let retired = retire_unix(listener, &path).unwrap();
        assert!(matches!(retired, Retired::EveryCopy), "{retired:?}");
        assert!(!path.exists());
        let deadline = std::time::Instant::now() + crate::base::sockets::LOOPBACK_DEADLINE;
        assert!(matches!(
            unix_connect(&path, deadline).unwrap(),
            UnixConnect::Missing
        ));
        held.release().unwrap();
    }
}
