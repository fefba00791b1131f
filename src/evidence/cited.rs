//! The sources the claims cite (man pages, kernel, libc and crate sources,
//! commits), one constant each, and the reasons several claims share: the
//! claims over verdicts ([`super::knowledge`]) and over tables' answers
//! ([`super::answers`]) quote the same pages.

/// Why the etxtbsy cells of 6.11 and 6.12 may show either answer.
pub(crate) const ETXTBSY_GAP: &str = "Linux 6.11 and 6.12.0 do not deny exec of a file open for writing (2a010c412853, \
    6.11), so the control is absent and the fixes not needed; the revert (3b832035387f, for 6.13) reached \
    6.12 stable at a release Debian's changelog does not name (its 6.12.3-1 upload took 6.12.1 to 6.12.3 \
    without listing their commits), and Debian's 6.12.117 denies it (measured, results/linux-6.12.117_deb12-*): \
    before 6.12.117 either answer may show";

pub(crate) const FLOCK_MAN: &str = "flock(2): https://man7.org/linux/man-pages/man2/flock.2.html";
pub(crate) const FCNTL_MAN: &str = "fcntl(2), Advisory record locking / Open file description locks: https://man7.org/linux/man-pages/man2/fcntl.2.html";
pub(crate) const FORK_MAN: &str = "fork(2): the child inherits copies of the parent's descriptors: https://man7.org/linux/man-pages/man2/fork.2.html";
pub(crate) const EXEC_MAN: &str = "execve(2): close-on-exec descriptors are closed at exec, others stay open: https://man7.org/linux/man-pages/man2/execve.2.html";
pub(crate) const STD_LOCK: &str =
    "rust-lang/rust library/std/src/sys/fs/unix.rs: File::lock/unlock are flock(LOCK_EX/LOCK_UN)";
pub(crate) const FS2_LOCK: &str =
    "danburkert/fs2-rs src/unix.rs: lock_exclusive/unlock are libc::flock";

pub(crate) const LISTEN_MAN: &str = "listen(2): the kernel completes handshakes into the backlog by itself: https://man7.org/linux/man-pages/man2/listen.2.html";
pub(crate) const SHUTDOWN_MAN: &str = "shutdown(2): acts on the socket, not the descriptor: https://man7.org/linux/man-pages/man2/shutdown.2.html";
pub(crate) const INET_SHUTDOWN: &str = "Linux net/ipv4/af_inet.c inet_shutdown(): a TCP_LISTEN socket is disconnected (tcp_disconnect → inet_csk_listen_stop) only when RCV_SHUTDOWN is asked";
pub(crate) const CLOSE_MAN: &str = "close(2): https://man7.org/linux/man-pages/man2/close.2.html";
pub(crate) const BIND_MAN: &str = "bind(2): https://man7.org/linux/man-pages/man2/bind.2.html";
pub(crate) const SOCKET_MAN: &str =
    "socket(2) SOCK_CLOEXEC, accept4(2): https://man7.org/linux/man-pages/man2/socket.2.html";
pub(crate) const PIPE_MAN: &str =
    "pipe2(2) O_CLOEXEC: https://man7.org/linux/man-pages/man2/pipe.2.html";
pub(crate) const GO_FORKLOCK: &str = "golang/go src/syscall/exec_unix.go: ForkLock, a RWMutex held for reading around create+CloseOnExec and for writing around fork";
pub(crate) const CLOSE_RANGE_MAN: &str =
    "close_range(2), Linux 5.9: https://man7.org/linux/man-pages/man2/close_range.2.html";
pub(crate) const CLOSEFROM_NP: &str = "posix_spawn_file_actions_addclosefrom_np, glibc 2.34: https://www.gnu.org/software/gnulib/manual/html_node/posix_005fspawn_005ffile_005factions_005faddclosefrom_005fnp.html";
pub(crate) const STD_FS_CLOEXEC: &str = "rust-lang/rust library/std/src/sys/fs/unix.rs and sys/fd/unix.rs: File::open adds O_CLOEXEC, try_clone is fcntl(F_DUPFD_CLOEXEC, 3)";
pub(crate) const OPEN_MAN: &str =
    "open(2) O_CLOEXEC: https://man7.org/linux/man-pages/man2/open.2.html";
pub(crate) const STD_CLOEXEC: &str = "rust-lang/rust library/std/src/sys/net/connection/socket/unix.rs and sys/pal/unix/pipe.rs: SOCK_CLOEXEC, accept4, pipe2 on Linux";
pub(crate) const EXECVE_ETXTBSY: &str = "execve(2) ETXTBSY: the file is open for writing by one or more processes: https://man7.org/linux/man-pages/man2/execve.2.html";
pub(crate) const ETXTBSY_COMMITS: &str = "Linux 2a010c412853 (\"fs: don't block i_writecount during exec\", 6.11), reverted by 3b832035387f (6.13)";
pub(crate) const CLOCK_GETTIME_MAN: &str =
    "clock_gettime(2), clock_getres: https://man7.org/linux/man-pages/man2/clock_gettime.2.html";
pub(crate) const TEMPFILE_SRC: &str =
    "Stebalien/tempfile src/util.rs: random names, exclusive create, retry on AlreadyExists";
pub(crate) const PROC_MAN: &str =
    "proc_pid_fd(5), proc_pid_exe(5): https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html";
pub(crate) const STD_SET_VAR: &str = "std::env::set_var docs: no other thread may read the environment outside std::env: https://doc.rust-lang.org/std/env/fn.set_var.html";
pub(crate) const GLIBC_GETENV: &str = "glibc commit \"stdlib: Make getenv thread-safe in more cases\" (2024-11, glibc 2.41): https://sourceware.org/pipermail/libc-alpha/2024-November/161640.html";
pub(crate) const UDP7: &str = "udp(7): https://man7.org/linux/man-pages/man7/udp.7.html";
pub(crate) const UNIX_MAN: &str = "unix(7): a socket bound to a pathname lives as a file until unlinked; connect to a stream socket: https://man7.org/linux/man-pages/man7/unix.7.html";
pub(crate) const AF_UNIX_CONNECT: &str = "Linux net/unix/af_unix.c unix_stream_connect(): ECONNREFUSED unless the peer is in TCP_LISTEN and lacks RCV_SHUTDOWN; unix_shutdown() sets sk_shutdown on the shared socket";
pub(crate) const CONNECT_MAN: &str = "connect(2) ENOENT / ECONNREFUSED, and unlink(2): https://man7.org/linux/man-pages/man2/connect.2.html";
pub(crate) const PIPE7_MAN: &str = "pipe(7): a read sees end-of-file only once every descriptor for the write end is closed: https://man7.org/linux/man-pages/man7/pipe.7.html";
pub(crate) const SOCKET7_REUSEADDR: &str = "socket(7) SO_REUSEADDR: a bind may reuse the address unless a socket is listening on it: https://man7.org/linux/man-pages/man7/socket.7.html";
