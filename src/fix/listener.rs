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

use std::io;
use std::net::{SocketAddr, TcpListener};

use crate::sockets::{BindOptions, bound};

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
/// use fdwindow::fix::listener::{retire, Retired};
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
    /// let placeholder = fdwindow::fix::listener::Placeholder::bind("127.0.0.1:0".parse().unwrap())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::child::HeldChild;
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
}
