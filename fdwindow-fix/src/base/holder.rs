//! A process that keeps copies of descriptors passed to it: the way
//! `fdwindow audit`'s injector holds a closed descriptor (`hold-by=pass`),
//! for comparing that way with the fork window it stands for.
//!
//! A descriptor passed over a Unix socket (`SCM_RIGHTS`, unix(7)) arrives as
//! a new descriptor for the same open file description, as a forked child's
//! copy is: a flock or OFD lock, a listener, a bound name, a pipe's write end
//! live on while the holder keeps it. What a fork copies besides (every other
//! descriptor, the memory) does not come with it.
//!
//! The holder is forked once, before the descriptors it will hold exist, so
//! it starts with nothing of theirs: it moves its end of the socket to
//! descriptor 0 and closes every other one (its stdio too, so no pipe
//! someone reads to end-of-file waits on it). Then it answers one-byte
//! requests: `H` carrying descriptors (kept, answered `h`) and `R` (every
//! kept copy closed, answered `r`). It exits at end-of-file on its socket,
//! when [`CopyHolder`] is dropped (which reaps it) or its owner dies.
//!
//! References: unix(7) (`SCM_RIGHTS`), cmsg(3),
//! <https://man7.org/linux/man-pages/man7/unix.7.html>.

use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::net::Shutdown;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};

/// The most copies the holder keeps at once (a trial passes one).
const MAX_HELD: usize = 64;
/// How long an answer may take: generous, a loaded machine can stall the
/// holder for seconds, but bounded, so a holder that died is an error.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The holder process and the owner's end of its socket.
#[derive(Debug)]
pub struct CopyHolder {
    pid: libc::pid_t,
    socket: UnixStream,
}

impl CopyHolder {
    /// Forks the holder. Call it before the descriptors it will hold are
    /// made: the fork copies whatever is open, and the holder closes it all
    /// at once, but a lock or a listener open now is held for that moment.
    pub fn start() -> io::Result<CopyHolder> {
        // std makes both ends close-on-exec; the holder execs nothing anyway.
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        let open_max = open_max();
        // SAFETY: the child runs `serve`, which makes only async-signal-safe
        // calls, allocates nothing and never returns (the owner may have
        // threads).
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => serve(&theirs, open_max),
            pid => Ok(CopyHolder { pid, socket: ours }),
        }
    }

    /// The holder's pid: the process whose descriptors a copy check reads.
    pub fn pid(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Passes a copy of `fd` and returns once the holder keeps it, with the
    /// number the copy has there.
    pub fn hold(&self, fd: BorrowedFd<'_>) -> io::Result<RawFd> {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds = [fd];
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::other(
                "no room for the descriptor in the message",
            ));
        }
        sendmsg(
            &self.socket,
            &[IoSlice::new(b"H")],
            &mut control,
            SendFlags::empty(),
        )?;
        self.answer(b'h', "keep the copy")?;
        let mut number = [0u8; size_of::<RawFd>()];
        (&self.socket).read_exact(&mut number)?;
        Ok(RawFd::from_ne_bytes(number))
    }

    /// Closes every copy the holder keeps, and returns once it has.
    pub fn release(&self) -> io::Result<()> {
        (&self.socket).write_all(b"R")?;
        self.answer(b'r', "close its copies")
    }

    fn answer(&self, expected: u8, what: &str) -> io::Result<()> {
        let mut byte = [0u8];
        match (&self.socket).read(&mut byte)? {
            1 if byte[0] == expected => Ok(()),
            0 => Err(io::Error::other(format!(
                "the holder ended before it could {what}"
            ))),
            _ => Err(io::Error::other(format!("the holder could not {what}"))),
        }
    }
}

impl Drop for CopyHolder {
    /// End-of-file on its socket (shut down, not closed: a forked copy of
    /// our end elsewhere does not delay it) ends the holder; then reap it.
    fn drop(&mut self) {
        let _ = self.socket.shutdown(Shutdown::Write);
        let pid = rustix::process::Pid::from_raw(self.pid);
        while let Err(rustix::io::Errno::INTR) =
            rustix::process::waitpid(pid, rustix::process::WaitOptions::empty())
        {}
    }
}

/// One past the highest descriptor the holder may have inherited.
fn open_max() -> RawFd {
    // Past a million, nobody has that many open; no limit reads as none.
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    limit.map_or(1 << 20, |n| {
        RawFd::try_from(n.min(1 << 20)).unwrap_or(1 << 20)
    })
}

/// The holder, in the forked child: async-signal-safe calls only (the owner
/// may have had threads), nothing allocated; never returns. Only
/// [`CopyHolder::start`]'s child may call it: it closes every descriptor
/// but `socket`'s.
fn serve(socket: &UnixStream, open_max: RawFd) -> ! {
    // Everything above the socket in one call where the OS has close_range;
    // the rest (stdio too) one by one.
    let keep = socket.as_raw_fd();
    let end = if crate::sys::close_range_from(keep + 1).is_ok() {
        keep
    } else {
        open_max
    };
    for fd in (0..end).filter(|&fd| fd != keep) {
        // SAFETY: the holder keeps nothing it inherited but `socket`, and
        // nothing here holds another descriptor open.
        unsafe { libc::close(fd) };
    }
    let mut held: [Option<OwnedFd>; MAX_HELD] = [const { None }; MAX_HELD];
    loop {
        let mut byte = [0u8];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let iov = &mut [IoSliceMut::new(&mut byte)];
        let kept = match recvmsg(socket, iov, &mut control, RecvFlags::empty()) {
            Ok(got) if got.bytes == 0 => exit(0),
            Ok(got) => !got.flags.contains(ReturnFlags::CTRUNC),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => exit(4),
        };
        // The copies this message brought; one past the room is closed.
        let mut arrived = None;
        let mut refused = !kept;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                for fd in fds {
                    match held.iter_mut().find(|slot| slot.is_none()) {
                        Some(slot) => arrived = Some(slot.insert(fd).as_raw_fd()),
                        None => refused = true,
                    }
                }
            }
        }
        // The answer: one byte, then for `h` the copy's number here.
        let mut answer = [0u8; 1 + size_of::<RawFd>()];
        let length = match (byte[0], arrived) {
            (b'H', Some(fd)) if !refused => {
                answer[0] = b'h';
                answer[1..].copy_from_slice(&fd.to_ne_bytes());
                answer.len()
            }
            (b'R', _) => {
                held.iter_mut().for_each(|slot| *slot = None);
                answer[0] = b'r';
                1
            }
            _ => {
                answer[0] = b'x';
                1
            }
        };
        if rustix::io::write(socket, &answer[..length]) != Ok(length) {
            exit(5);
        }
    }
}

/// Ends the holder at once: no destructor, no atexit handler of the owner's.
fn exit(code: i32) -> ! {
    crate::sys::exit_now(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A passed copy keeps a listener alive after the owner's close, and
    /// release lets it go: connects succeed, then are refused.
    #[test]
    fn a_passed_listener_lives_until_release() {
        let _serial = crate::test_serial();
        let holder = CopyHolder::start().expect("start the holder");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let theirs = holder.hold(listener.as_fd()).expect("hold");
        assert!(crate::sys::same_open_file_as(holder.pid(), theirs, listener.as_raw_fd()).unwrap());
        drop(listener);
        assert!(
            std::net::TcpStream::connect(addr).is_ok(),
            "the copy listens"
        );
        holder.release().expect("release");
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "nothing listens"
        );
    }

    /// The holder starts with none of the owner's descriptors: a pipe
    /// opened before the start reads end-of-file once the owner closes its
    /// write end, and the holder ends (and is reaped) when dropped.
    #[test]
    fn the_holder_keeps_nothing_it_was_not_given() {
        // Its fork holds other tests' descriptors for a moment.
        let _serial = crate::test_serial();
        let (mut reader, writer) = io::pipe().unwrap();
        let holder = CopyHolder::start().expect("start the holder");
        let pid = holder.pid();
        // The holder closes what it inherited at once, but asynchronously:
        // one round trip proves it got there.
        holder.release().expect("release");
        drop(writer);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).expect("end-of-file");
        drop(holder);
        let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
        let alive = rustix::process::test_kill_process(pid).is_ok();
        assert!(!alive, "the holder was reaped");
    }
}
