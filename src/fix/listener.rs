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
/// and every copy of it refuses connections (a SYN to a socket that is not
/// listening gets a reset). Call [`Placeholder::listen`] when the server is
/// ready, so the port was never free for someone else in between.
/// Backed by `listener-survival bound-unlistened` and `port-pick pick-unlistened`.
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
    /// assert!(std::net::TcpStream::connect(addr).is_err()); // bound, not listening
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
        assert!(
            TcpStream::connect(addr).is_err(),
            "a bound, unlistened socket accepted"
        );
        let l = p.listen(8).unwrap();
        assert!(TcpStream::connect(addr).is_ok());
        drop(l);
        held.release().unwrap();
    }
}
