//! macOS: the product version names the platform (xnu's release tracks it).

use std::io;

use super::FreshFd;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

pub const OS_ID: Option<&str> = Some("macos");

/// `sysctlbyname(name, old, &oldlen, new, newlen)`: reads the value into
/// `old` (when given) and sets it from `new` (when given); the length read.
/// The one call every sysctl here goes through: safe for any input, since
/// each buffer is passed with its own length (the kernel writes at most
/// `old.len()` bytes and only reads `new`).
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man3/sysctlbyname.3.html>
fn sysctl(name: &std::ffi::CStr, old: Option<&mut [u8]>, new: Option<&[u8]>) -> Option<usize> {
    let (old_ptr, mut old_len) = match old {
        Some(buf) => (buf.as_mut_ptr(), buf.len()),
        None => (std::ptr::null_mut(), 0),
    };
    let old_len_ptr = if old_ptr.is_null() {
        std::ptr::null_mut()
    } else {
        &raw mut old_len
    };
    let (new_ptr, new_len) = new.map_or((std::ptr::null(), 0), |v| (v.as_ptr(), v.len()));
    // SAFETY: `old_ptr` is null (with a null length pointer) or writable for
    // `old_len` bytes; `new_ptr` is null or readable for `new_len` bytes and
    // is never written; `name` is NUL-terminated.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            old_ptr.cast(),
            old_len_ptr,
            new_ptr.cast_mut().cast(),
            new_len,
        )
    };
    (rc == 0).then_some(old_len)
}

/// `sysctlbyname(name)` as an int, or `None`.
fn sysctl_int(name: &std::ffi::CStr) -> Option<libc::c_int> {
    let mut value = [0u8; std::mem::size_of::<libc::c_int>()];
    sysctl(name, Some(&mut value), None)?;
    Some(libc::c_int::from_ne_bytes(value))
}

/// `sysctlbyname(name)` as a string, or `None`.
fn sysctl_string(name: &std::ffi::CStr) -> Option<String> {
    let mut buf = [0u8; 64];
    let len = sysctl(name, Some(&mut buf), None)?.min(buf.len());
    let end = buf[..len].iter().position(|&b| b == 0).unwrap_or(len);
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// `sysctlbyname("kern.system_version_compat")`: 1 when this process runs
/// with the version-compatibility shim on.
fn version_compat() -> Option<libc::c_int> {
    sysctl_int(c"kern.system_version_compat")
}

/// Sets this process's `kern.system_version_compat` flag (anyone may set
/// their own: `CTLFLAG_ANYBODY`).
fn set_version_compat(value: libc::c_int) -> bool {
    sysctl(
        c"kern.system_version_compat",
        None,
        Some(&value.to_ne_bytes()),
    )
    .is_some()
}

/// The macOS product version this machine runs, e.g. `26.1`.
///
/// `kern.osproductversion` alone can lie: a binary linked against an older
/// SDK runs with the version-compatibility shim on (dyld turns it on, and
/// libsyscall's `__libkernel_init_late` sets `kern.system_version_compat`),
/// and then the sysctl answers `kern.osproductversioncompat` instead: 16.0 on
/// macOS 26, 10.16 on macOS 11. Reading SystemVersion.plist does not help: in
/// that mode libsyscall's `open` shim redirects it to
/// SystemVersionCompat.plist. So the flag is switched off for this process
/// while the version is read, then restored; where that fails, the known
/// compatibility versions are mapped back by the Darwin major
/// ([`super::compat::product_version`]).
///
/// # References
/// - xnu `bsd/kern/kern_sysctl.c`: `sysctl_osproductversion` returns
///   `osproductversioncompat` when `task_has_system_version_compat_enabled`;
///   `sysctl_system_version_compat` sets the task's flag (`CTLFLAG_ANYBODY`)
/// - xnu `libsyscall/wrappers/_libkernel_init.c` (`__libkernel_init_late`),
///   `libsyscall/wrappers/system-version-compat.c` (the plist open shim)
/// - dotnet/runtime#116536: macOS 26 reports 16 unless built with Xcode 26's SDK
pub fn os_release() -> Option<String> {
    let compat_on = version_compat() == Some(1);
    let switched_off = compat_on && set_version_compat(0);
    let reported = sysctl_string(c"kern.osproductversion");
    if switched_off {
        set_version_compat(1);
    }
    let reported = reported?;
    let darwin =
        sysctl_string(c"kern.osrelease").and_then(|r| r.split('.').next()?.parse::<u32>().ok());
    Some(super::compat::product_version(&reported, darwin))
}

/// The full product version (`15.3.1`): a point release can change the kernel.
pub fn id_version(os_release: &str, _kernel_release: &str) -> String {
    if os_release.is_empty() {
        "unknown".into()
    } else {
        os_release.to_owned()
    }
}

/// `sysctlbyname("kern.hv_vmm_present")`: 1 inside a virtual machine.
///
/// # References
/// - <https://developer.apple.com/documentation/apple-silicon/running-your-app-in-a-virtual-machine>
pub fn hypervisor_present() -> bool {
    sysctl_int(c"kern.hv_vmm_present") == Some(1)
}

/// The 1-minute load average from `sysctl vm.loadavg`: xnu's `struct
/// loadavg { fixpt_t ldavg[3]; long fscale; }` (a u32 each, padding, then a
/// 64-bit `long` at offset 16), the first value over `fscale`, as Libc's
/// `getloadavg` computes it.
///
/// # References
/// - xnu `bsd/sys/resource.h` (`struct loadavg`); Libc `gen/FreeBSD/getloadavg.c`
pub fn load_average() -> Option<f64> {
    let mut raw = [0u8; 24];
    if sysctl(c"vm.loadavg", Some(&mut raw), None)? < raw.len() {
        return None;
    }
    let first = u32::from_ne_bytes(raw[0..4].try_into().ok()?);
    let scale = i64::from_ne_bytes(raw[16..24].try_into().ok()?);
    (scale > 0).then(|| f64::from(first) / scale as f64)
}

/// A `struct sigaction` with `handler` (`SIG_DFL`, `SIG_IGN` or a function's
/// address), `mask` and `flags`: built field by field, nothing left unset.
pub fn sigaction_of(
    handler: libc::sighandler_t,
    mask: super::SigSet,
    flags: libc::c_int,
) -> libc::sigaction {
    libc::sigaction {
        sa_sigaction: handler,
        sa_mask: *mask.as_ref(),
        sa_flags: flags,
    }
}

/// libSystem carries no version of its own apart from the OS's.
pub fn libc_name_version() -> (String, String) {
    ("libsystem".into(), String::new())
}

/// `fcntl` commands for open file description locks, in xnu's public
/// `<sys/fcntl.h>` from xnu-10002 (macOS 14; earlier releases kept them in
/// its private part). The libc crate does not export them for Apple targets.
///
/// # References
/// - xnu `bsd/sys/fcntl.h`: `F_OFD_SETLK 90`, `F_OFD_GETLK 92`
pub const F_OFD_GETLK: Option<libc::c_int> = Some(92);
/// See [`F_OFD_GETLK`].
pub const F_OFD_SETLK: Option<libc::c_int> = Some(90);

/// No reader for xnu's TCP connection table yet (netstat reads it through
/// the `net.inet.tcp.pcblist_n` sysctl); callers report `unsupported`.
pub fn tcp_state(
    _local: std::net::SocketAddr,
    _peer: std::net::SocketAddr,
) -> std::io::Result<Option<&'static str>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no reader for the TCP connection table on macOS yet",
    ))
}

/// `setsockopt(SO_REUSEPORT, 1)`: on macOS (BSD semantics) every socket
/// binding the same address and port must set it.
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/setsockopt.2.html>
pub fn set_reuse_port(sock: &socket2::Socket) -> std::io::Result<()> {
    sock.set_reuse_port(true)
}

/// `SOCK_CLOEXEC` is not defined for Apple targets (neither the SDK headers
/// through macOS 26 nor the libc crate define it), so there is no value to
/// try: std makes sockets with `socket`, then `ioctl(FIOCLEX)`. Were a later
/// SDK to define it, the value would be tried at run time and xnu's answer to
/// unknown type bits (`EPROTONOSUPPORT` or `EPROTOTYPE`) read as absent.
///
/// # References
/// - gdnsd/gdnsd#180; libc 0.2.68 dropped the constant for Apple targets
///   (vmware-archive/differential-datalog#560); rust-lang/rust#24237
pub const SOCK_CLOEXEC: Result<libc::c_int, &str> = Err(
    "SOCK_CLOEXEC is not defined on this SDK (macOS through 26): sockets are made close-on-exec in a second call",
);

/// A libSystem function looked up at run time (`dlsym(RTLD_DEFAULT, name)`):
/// the SDK a binary was built with says nothing about the macOS it runs on,
/// and a weak import of a missing function is NULL (rbenv/ruby-build#2641).
fn lookup(name: &std::ffi::CStr) -> Option<std::ptr::NonNull<libc::c_void>> {
    super::symbol(name)
}

/// `accept4`, looked up at run time. Even where it exists, its flag
/// (`SOCK_CLOEXEC`) is not defined on this SDK, so it cannot be called with a
/// known close-on-exec bit: both cases say so.
pub fn accept4_cloexec(_fd: BorrowedFd<'_>) -> Result<io::Result<OwnedFd>, &'static str> {
    match lookup(c"accept4") {
        None => Err(
            "libSystem has no accept4 (looked up at run time; absent through macOS 26): accepted sockets are made close-on-exec in a second call",
        ),
        Some(_) => Err(
            "libSystem has accept4, but SOCK_CLOEXEC is not defined on this SDK, so no flag can be passed",
        ),
    }
}

/// `pipe2(fds, O_CLOEXEC)`, looked up at run time: the macOS 27 SDK declares
/// it "available since macOS 27.0"; on macOS 26 and earlier the weak symbol is
/// NULL (rbenv/ruby-build#2641, python/cpython#154718).
pub fn pipe2_cloexec() -> Result<io::Result<(OwnedFd, OwnedFd)>, &'static str> {
    let Some(sym) = lookup(c"pipe2") else {
        return Err(
            "libSystem has no pipe2 (looked up at run time; added in macOS 27): pipes are made close-on-exec in a second call",
        );
    };
    // SAFETY: pipe2's C signature is int pipe2(int fds[2], int flags).
    let pipe2: unsafe extern "C" fn(*mut libc::c_int, libc::c_int) -> libc::c_int =
        unsafe { std::mem::transmute(sym.as_ptr()) };
    let mut fds = [-1; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    let rc = unsafe { pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    Ok(FreshFd::pair(rc, fds))
}

/// The descriptors `pid` has open, with their types:
/// `proc_pidinfo(PROC_PIDLISTFDS)` (libproc). It fails with `EPERM` for
/// another user's process and `ESRCH` for one that has gone.
///
/// The buffer is sized first by the kernel's own estimate (a NULL buffer
/// answers the table's size plus 20 entries): xnu's `proc_pidfdlist` clips
/// the table it walks to the buffer's capacity *by descriptor number*
/// (`for (n = 0; n < numfds && n < fd_nfiles; n++)` in xnu-6153 and
/// earlier), so a small buffer returns fewer entries than it holds while
/// missing every descriptor above its capacity, and "not full" would not
/// mean "complete".
///
/// # References
/// - xnu `bsd/kern/proc_info.c` (`proc_pidfdlist`)
fn fd_list(pid: libc::pid_t) -> io::Result<Vec<libc::proc_fdinfo>> {
    let size = std::mem::size_of::<libc::proc_fdinfo>();
    let blank = libc::proc_fdinfo {
        proc_fd: 0,
        proc_fdtype: 0,
    };
    let estimate = list_fds_into(pid, None);
    if estimate <= 0 {
        return Err(io::Error::last_os_error());
    }
    let entries = (estimate as usize / size).max(64);
    let mut buf: Vec<libc::proc_fdinfo> = vec![blank; entries];
    loop {
        let n = list_fds_into(pid, Some(&mut buf));
        let bytes = (buf.len() * size).min(i32::MAX as usize) as libc::c_int;
        if n <= 0 {
            return Err(io::Error::last_os_error());
        }
        // A full buffer may have cut the list short: grow and ask again.
        if n < bytes {
            buf.truncate(n as usize / size);
            return Ok(buf);
        }
        buf.resize(buf.len() * 2, blank);
    }
}

/// `proc_pidinfo(pid, PROC_PIDLISTFDS, 0, buf, size)`: the bytes written
/// into `buf` (at most its size, clipped to `c_int`), or with `None` (a NULL
/// buffer of size 0) the kernel's estimate of the size needed; `<= 0` on
/// failure, with errno set. The one call of that flavor here: safe for any
/// input, since the buffer goes with its own size and `proc_fdinfo` is two
/// integers, valid for any bytes the kernel writes.
fn list_fds_into(pid: libc::pid_t, buf: Option<&mut [libc::proc_fdinfo]>) -> libc::c_int {
    let (ptr, bytes) = match buf {
        Some(b) => (
            b.as_mut_ptr(),
            std::mem::size_of_val(b).min(i32::MAX as usize) as libc::c_int,
        ),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: `ptr` is null with size 0 (the kernel only answers a size) or
    // writable for `bytes` bytes, which is all proc_pidinfo writes.
    unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, ptr.cast(), bytes) }
}

/// The descriptors `pid` has open: see [`fd_list`] (works for the caller's
/// own children).
pub fn process_fds(pid: libc::pid_t) -> io::Result<Vec<RawFd>> {
    let mut fds: Vec<RawFd> = fd_list(pid)?.iter().map(|i| i.proc_fd).collect();
    fds.sort_unstable();
    Ok(fds)
}

/// `proc_pidfdinfo` flavors (xnu `bsd/sys/proc_info.h`; the libc crate
/// does not export them).
const PROC_PIDFDVNODEINFO: libc::c_int = 1;
const PROC_PIDFDSOCKETINFO: libc::c_int = 3;

/// `struct proc_fileinfo` (xnu `bsd/sys/proc_info.h`): what every
/// `proc_pidfdinfo` answer starts with.
#[repr(C)]
#[derive(Clone, Copy)]
struct ProcFileinfo {
    fi_openflags: u32,
    fi_status: u32,
    fi_offset: libc::off_t,
    fi_type: i32,
    fi_guardflags: u32,
}

/// `struct vnode_fdinfo`: the file info, then the vnode's `vinfo_stat`.
#[repr(C)]
#[derive(Clone, Copy)]
struct VnodeFdinfo {
    pfi: ProcFileinfo,
    pvi: libc::vnode_info,
}

/// The head of `struct socket_fdinfo`: the file info, then `socket_info`'s
/// first fields (`soi_stat`, then `soi_so`, the socket's opaque handle).
#[repr(C)]
#[derive(Clone, Copy)]
struct SocketFdinfoHead {
    pfi: ProcFileinfo,
    soi_stat: libc::vinfo_stat,
    soi_so: u64,
}

/// Room for any `proc_pidfdinfo` answer read here: the kernel refuses a
/// buffer smaller than the whole structure (`ENOMEM`), and
/// `struct socket_fdinfo` is well under 4 KiB.
#[repr(C, align(8))]
struct FdinfoBuf([u8; 4096]);

/// `proc_pidfdinfo(pid, fd, flavor, buf, sizeof buf)`: the bytes written,
/// `<= 0` on failure. The one call of it here: safe for any input, since the
/// buffer is passed with its own length. No allocation: a forked child may
/// call it.
fn pidfdinfo_into(
    pid: libc::pid_t,
    fd: RawFd,
    flavor: libc::c_int,
    buf: &mut FdinfoBuf,
) -> libc::c_int {
    // SAFETY: buf is writable for its whole length, which is what is passed.
    unsafe {
        libc::proc_pidfdinfo(
            pid,
            fd,
            flavor,
            buf.0.as_mut_ptr().cast(),
            buf.0.len() as libc::c_int,
        )
    }
}

/// `proc_pidfdinfo(pid, fd, flavor)`, read as `T` (a prefix of the answer).
fn pidfdinfo<T: Copy>(pid: libc::pid_t, fd: RawFd, flavor: libc::c_int) -> io::Result<T> {
    let mut buf = FdinfoBuf([0; 4096]);
    let n = pidfdinfo_into(pid, fd, flavor, &mut buf);
    if n <= 0 {
        return Err(io::Error::last_os_error());
    }
    if (n as usize) < std::mem::size_of::<T>() {
        return Err(io::Error::other("proc_pidfdinfo answered short"));
    }
    // SAFETY: the kernel wrote at least size_of::<T>() bytes of a structure
    // that begins with T's fields; T is plain old data.
    Ok(unsafe { std::ptr::read_unaligned(buf.0.as_ptr().cast::<T>()) })
}

/// A file's identity as both `stat(2)` and libproc give it: `vst_dev` is
/// 32 bits, so the device is compared in 32 bits.
pub fn inode_object(dev: u64, ino: u64) -> super::Object {
    super::Object::Inode {
        dev: u64::from(dev as u32),
        ino,
    }
}

/// The object `fd` refers to: a file by device and inode; a socket by its
/// handle, since xnu's `soo_stat` leaves a socket's `st_ino` zero.
///
/// # References
/// - xnu `bsd/kern/sys_socket.c` (`soo_stat`), `bsd/kern/socket_info.c`
///   (`fill_socketinfo`: `soi_so = VM_KERNEL_ADDRHASH(so)`)
pub fn object_of(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<super::Object> {
    use std::os::fd::AsRawFd;
    let st = rustix::fs::fstat(fd)?;
    if st.st_mode & libc::S_IFMT == libc::S_IFSOCK {
        let me = std::process::id() as libc::pid_t;
        let head: SocketFdinfoHead = pidfdinfo(me, fd.as_raw_fd(), PROC_PIDFDSOCKETINFO)?;
        return Ok(super::Object::Socket(head.soi_so));
    }
    Ok(inode_object(st.st_dev as u64, st.st_ino))
}

/// `PROC_PIDFDPIPEINFO` (xnu `bsd/sys/proc_info.h`).
const PROC_PIDFDPIPEINFO: libc::c_int = 6;

/// The head of `struct pipe_fdinfo`: the file info, then `pipe_info`'s
/// `pipe_stat` and `pipe_handle` (the pipe's opaque handle).
#[repr(C)]
#[derive(Clone, Copy)]
struct PipeFdinfoHead {
    pfi: ProcFileinfo,
    pipe_stat: libc::vinfo_stat,
    pipe_handle: u64,
}

/// What names the object behind `pid`'s descriptor `fd` to libproc: a
/// socket's or a pipe's opaque handle, a file's device and inode.
fn libproc_identity(pid: libc::pid_t, fd: RawFd, mode: u32) -> io::Result<(u64, u64)> {
    match mode & u32::from(libc::S_IFMT) {
        m if m == u32::from(libc::S_IFSOCK) => {
            pidfdinfo::<SocketFdinfoHead>(pid, fd, PROC_PIDFDSOCKETINFO).map(|h| (h.soi_so, 0))
        }
        m if m == u32::from(libc::S_IFIFO) => {
            pidfdinfo::<PipeFdinfoHead>(pid, fd, PROC_PIDFDPIPEINFO).map(|h| (h.pipe_handle, 0))
        }
        _ => pidfdinfo::<VnodeFdinfo>(pid, fd, PROC_PIDFDVNODEINFO)
            .map(|v| (u64::from(v.pvi.vi_stat.vst_dev), v.pvi.vi_stat.vst_ino)),
    }
}

/// Whether `pid`'s descriptor `theirs` refers to the object this process's
/// `ours` does, as libproc names it (xnu exposes no open file description's
/// identity: the same socket, pipe or file is what can be compared). `EBADF`
/// from the child, or a descriptor of another kind there, is no copy.
///
/// # References
/// - xnu `bsd/kern/proc_info.c` (`proc_pidfdinfo`: `pid_socketinfo`,
///   `pid_pipeinfo`, `pid_vnodeinfo`)
pub fn same_open_file_as(pid: u32, theirs: RawFd, ours: RawFd) -> io::Result<bool> {
    let mut st = libc::stat::default();
    // SAFETY: fstat writes only into the struct passed.
    if unsafe { libc::fstat(ours, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mode = u32::from(st.st_mode);
    let me = std::process::id() as libc::pid_t;
    let ours = libproc_identity(me, ours, mode)?;
    match libproc_identity(pid as libc::pid_t, theirs, mode) {
        Ok(theirs) => Ok(theirs == ours),
        // No such descriptor there, or one of another kind.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF | libc::EINVAL)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Every pid, from `proc_listallpids` (which answers a count of pids, 0 on
/// failure: Libc's `libproc.c`).
fn all_pids() -> io::Result<Vec<libc::pid_t>> {
    let pids = list_pids(|buf, bytes| {
        // SAFETY: buf has room for `bytes` bytes.
        unsafe { libc::proc_listallpids(buf, bytes) }
    })?;
    // This process at least exists: an empty list is libproc's failure.
    if pids.is_empty() {
        return Err(io::Error::last_os_error());
    }
    Ok(pids)
}

/// A libproc pid list, grown until it fits.
fn list_pids(
    call: impl Fn(*mut libc::c_void, libc::c_int) -> libc::c_int,
) -> io::Result<Vec<libc::pid_t>> {
    let mut cap = 1024usize;
    loop {
        let mut buf: Vec<libc::pid_t> = vec![0; cap];
        let bytes = (cap * std::mem::size_of::<libc::pid_t>()) as libc::c_int;
        // libproc answers 0 for an empty list and for a failure alike (its
        // proc_listpids turns the kernel's -1 into 0, errno set: Libc
        // libproc.c), so errno is cleared first and read on 0: a failed
        // `children_of` must not read as "no children".
        errno::set_errno(errno::Errno(0));
        let n = call(buf.as_mut_ptr().cast(), bytes);
        let failed = io::Error::last_os_error();
        if n < 0 || (n == 0 && failed.raw_os_error() != Some(0)) {
            return Err(failed);
        }
        let n = n as usize;
        if n < cap {
            buf.truncate(n);
            return Ok(buf);
        }
        cap *= 2;
    }
}

/// The pids holding `object`: every process (`proc_listallpids`) whose
/// descriptors of the matching type (`PROC_PIDLISTFDS`) include one that
/// `proc_pidfdinfo` says is that object. Another user's processes answer
/// `EPERM` and are skipped, as `lsof` skips them.
///
/// # References
/// - xnu `bsd/kern/proc_info.c` (`proc_pidfdinfo`, `PROC_PIDLISTFDS`)
pub fn holders_of_object(object: super::Object) -> io::Result<Vec<u32>> {
    use super::Object;
    let (fdtype, flavor) = match object {
        Object::Inode { .. } => (libc::PROX_FDTYPE_VNODE, PROC_PIDFDVNODEINFO),
        Object::Socket(_) => (libc::PROX_FDTYPE_SOCKET, PROC_PIDFDSOCKETINFO),
    };
    let matches = |pid: libc::pid_t, fd: RawFd| -> bool {
        match object {
            Object::Inode { dev, ino } => {
                pidfdinfo::<VnodeFdinfo>(pid, fd, flavor).is_ok_and(|v| {
                    u64::from(v.pvi.vi_stat.vst_dev) == dev && v.pvi.vi_stat.vst_ino == ino
                })
            }
            Object::Socket(so) => {
                pidfdinfo::<SocketFdinfoHead>(pid, fd, flavor).is_ok_and(|h| h.soi_so == so)
            }
        }
    };
    let mut holders = Vec::new();
    for pid in all_pids()? {
        let Ok(fds) = fd_list(pid) else {
            continue;
        };
        let held = fds
            .iter()
            .filter(|f| f.proc_fdtype == fdtype as u32)
            .any(|f| matches(pid, f.proc_fd));
        if held {
            holders.push(pid as u32);
        }
    }
    Ok(holders)
}

/// The executable `pid` runs now: `proc_pidpath` (a fork that has not
/// exec'd still answers its parent's, as it shares the text vnode).
pub fn exe_of(pid: u32) -> io::Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; libc::PROC_PIDPATHINFO_MAXSIZE as usize];
    // SAFETY: buf is writable for the length passed.
    let n = unsafe {
        libc::proc_pidpath(
            pid as libc::c_int,
            buf.as_mut_ptr().cast(),
            buf.len() as u32,
        )
    };
    if n <= 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(std::ffi::OsStr::from_bytes(&buf).into())
}

/// The live children of `parent`: `proc_listchildpids` (a count of pids).
pub fn children_of(parent: u32) -> io::Result<Vec<u32>> {
    let pids = list_pids(|buf, bytes| {
        // SAFETY: buf has room for `bytes` bytes.
        unsafe { libc::proc_listchildpids(parent as libc::pid_t, buf, bytes) }
    })?;
    Ok(pids.into_iter().map(|p| p as u32).collect())
}

/// The clocks `clock_gettime(3)` offers on macOS (10.12+), by name. Apple's
/// Libc builds CLOCK_REALTIME from `gettimeofday()`, so it ticks in whole
/// microseconds; the `_APPROX` clocks are the cheap, coarse ones.
///
/// # References
/// - Apple `clock_gettime(3)`; Libc-1158.1.2 `gen/clock_gettime.c`, quoted in mono/mono#21137
pub const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("CLOCK_REALTIME", libc::CLOCK_REALTIME),
    ("CLOCK_MONOTONIC", libc::CLOCK_MONOTONIC),
    ("CLOCK_MONOTONIC_RAW", libc::CLOCK_MONOTONIC_RAW),
    (
        "CLOCK_MONOTONIC_RAW_APPROX",
        libc::CLOCK_MONOTONIC_RAW_APPROX,
    ),
    ("CLOCK_UPTIME_RAW", libc::CLOCK_UPTIME_RAW),
    ("CLOCK_UPTIME_RAW_APPROX", libc::CLOCK_UPTIME_RAW_APPROX),
];

/// The clock behind `std::time::Instant` on Apple targets (rust-lang/rust
/// `library/std/src/sys/pal/unix/time.rs`).
pub const INSTANT_CLOCK: &str = "CLOCK_UPTIME_RAW";

/// dyld's insert variable (`dyld(1)`: "a colon separated list of dynamic
/// libraries to load before the ones specified in the program"), and the
/// suffix of a shared library's file name. System Integrity Protection strips
/// `DYLD_*` from protected binaries (those under /usr/bin, /bin), so the host
/// must be the test binary itself, not a shell that runs it.
///
/// # References
/// - `man 1 dyld` (DYLD_INSERT_LIBRARIES)
/// - <https://developer.apple.com/library/archive/documentation/Security/Conceptual/System_Integrity_Protection_Guide/RuntimeProtections/RuntimeProtections.html>
pub const PRELOAD: Option<(&str, &str)> = Some(("DYLD_INSERT_LIBRARIES", "dylib"));
/// macOS has no `close_range(2)`. The error is a bare errno (`ENOSYS`):
/// this may run in a `pre_exec` hook, between fork and exec, where building
/// an error with a message would allocate. Callers decide support in the
/// parent with [`close_range_supported`].
pub fn close_range_from(_first: std::os::fd::RawFd) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// macOS has no `close_range(2)` (it is Linux 5.9+ and FreeBSD 13+).
pub fn close_range_supported() -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "macOS has no close_range(2)",
    ))
}

/// macOS has `vfork(2)`, but Rust cannot call it soundly (it returns twice
/// into one stack frame, and Rust has no `returns_twice` attribute), and xnu
/// offers no clone-style call that runs the child on a stack of its own.
pub fn vfork_supported() -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "vfork() returns twice into one stack frame, which Rust cannot call soundly, and xnu has \
         no clone(CLONE_VM|CLONE_VFORK) to run the child on its own stack",
    ))
}

/// Never called: [`vfork_supported`] fails first.
pub fn vfork_exec(
    _program: &std::ffi::CStr,
    _argv: &[*const libc::c_char],
    _envp: &[*const libc::c_char],
    _stdio: std::os::fd::RawFd,
) -> std::io::Result<libc::pid_t> {
    vfork_supported().map(|()| 0)
}

/// Whether libSystem has `posix_spawn_file_actions_addclosefrom_np`; its own
/// answer to the problem is `POSIX_SPAWN_CLOEXEC_DEFAULT`.
///
/// Looked up at run time: no libSystem has it yet (gnulib lists it missing
/// on macOS 14), but a binary built today must use it on the macOS that adds it.
pub fn addclosefrom_supported() -> std::io::Result<()> {
    if lookup(c"posix_spawn_file_actions_addclosefrom_np").is_some() {
        Ok(())
    } else {
        Err(no_addclosefrom())
    }
}

fn no_addclosefrom() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "libSystem has no posix_spawn_file_actions_addclosefrom_np (looked up at run time; \
         its own answer is POSIX_SPAWN_CLOEXEC_DEFAULT)",
    )
}

/// `posix_spawn_file_actions_addclosefrom_np(actions, from)` where libSystem has it.
pub fn addclosefrom(spawner: &mut super::Spawner, from: libc::c_int) -> std::io::Result<()> {
    super::addclosefrom_or(spawner, from, no_addclosefrom)
}

/// `POSIX_SPAWN_CLOEXEC_DEFAULT`—posix_spawn closes every descriptor not
/// named by a file action in the child (an Apple extension).
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man3/posix_spawnattr_setflags.3.html>
pub fn spawn_cloexec_default_flag() -> std::io::Result<libc::c_short> {
    Ok(libc::POSIX_SPAWN_CLOEXEC_DEFAULT as libc::c_short)
}

/// No subreaper here: a killed group's orphans go to launchd, which reaps
/// them once they have died.
pub fn adopt_orphans() -> io::Result<()> {
    Ok(())
}

/// Not counted here: callers keep their smallest bound.
pub fn process_room() -> Option<u64> {
    None
}

/// No parent-death signal here: a VM of a killed `fdwindow vm` is left to its
/// process group's fate (it is killed on every path `fdwindow` survives). A
/// child that is one of fdwindow's own probes watches its parent itself
/// ([`exit_with_parent`]).
pub fn die_with_parent(_cmd: &mut std::process::Command) {}

/// The start time of process `pid` in microseconds since the epoch
/// (`proc_pidinfo(PROC_PIDTBSDINFO)`'s `pbi_start_tvsec` and `_tvusec`):
/// with the pid it names one process, as a reused pid starts later. The
/// injector reads the same fields (shims/inject.c, `start_time_of`).
///
/// # References
/// - xnu `bsd/sys/proc_info.h` (`struct proc_bsdinfo`)
pub fn start_time_of(pid: u32) -> io::Result<u64> {
    let pid = libc::c_int::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let mut info = libc::proc_bsdinfo::default();
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is `size` bytes of a proc_bsdinfo, which
    // PROC_PIDTBSDINFO fills.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    if n != size {
        return Err(io::Error::last_os_error());
    }
    Ok(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
}

/// Kills this process's group (this process and every child it started,
/// when it leads its group; else this process alone) once process `parent`
/// exits, the stand-in for Linux's parent-death signal, which xnu lacks.
///
/// A kqueue watch, `EVFILT_PROC` with `NOTE_EXIT` on `parent`, registered
/// here and waited on by a thread of its own. The order closes the gaps:
/// 1. Unless `parent` is this process's parent, nothing is watched: a child
///    that inherited the caller's variable has another parent. A parent
///    already gone has left this process to launchd (pid 1): the group is
///    killed at once.
/// 2. The watch is registered; `ESRCH` means the parent exited meanwhile.
/// 3. The parent is checked again: one that exited between 1 and 2 left
///    this process reparented, and its exit event may never come.
/// 4. The thread blocks in `kevent(2)` until the exit event, then kills.
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/kqueue.2.html>
///   (`EVFILT_PROC`, `NOTE_EXIT`: "The process has exited")
pub fn exit_with_parent(parent: u32) -> io::Result<()> {
    use rustix::event::kqueue::{Event, EventFilter, EventFlags, ProcessEvents, kevent, kqueue};
    use rustix::process::{Pid, getppid};
    let Some(parent) = i32::try_from(parent).ok().and_then(Pid::from_raw) else {
        return Ok(());
    };
    match getppid() {
        Some(p) if p == parent => {}
        Some(p) if p == Pid::INIT => kill_own_group(),
        _ => return Ok(()),
    }
    let queue = kqueue()?;
    let watch = Event::new(
        EventFilter::Proc {
            pid: parent,
            flags: ProcessEvents::EXIT,
        },
        EventFlags::ADD | EventFlags::ONESHOT,
        std::ptr::null_mut(),
    );
    let mut none: [Event; 0] = [];
    // SAFETY: the event names a process, not a descriptor, so there is no
    // descriptor whose lifetime the kqueue could outlast.
    match unsafe { kevent(&queue, &[watch], &mut none, None) } {
        Ok(_) => {}
        Err(rustix::io::Errno::SRCH) => kill_own_group(),
        Err(e) => return Err(e.into()),
    }
    if getppid() != Some(parent) {
        kill_own_group();
    }
    std::thread::Builder::new()
        .name("fdwindow-parent".into())
        .spawn(move || {
            let mut events: Vec<Event> = Vec::with_capacity(1);
            loop {
                // SAFETY: as above, only the process watch is registered.
                let waited = unsafe {
                    kevent(
                        &queue,
                        &[],
                        rustix::buffer::spare_capacity(&mut events),
                        None,
                    )
                };
                match waited {
                    Ok(n) if n > 0 => kill_own_group(),
                    Ok(_) | Err(rustix::io::Errno::INTR) => continue,
                    // The watch is lost; the runner's timeout still applies
                    // while the runner lives.
                    Err(_) => return,
                }
            }
        })?;
    Ok(())
}

/// SIGKILL to this process's group when it leads one (its children die with
/// it), else to this process alone: never to a group it merely joined.
fn kill_own_group() -> ! {
    use rustix::process::{Signal, getpgrp, getpid, kill_current_process_group, kill_process};
    if getpgrp() == getpid() {
        let _ = kill_current_process_group(Signal::KILL);
    }
    let _ = kill_process(getpid(), Signal::KILL);
    // SIGKILL cannot be caught or blocked; should it somehow not have ended
    // the process, end it without running anything more.
    std::process::abort()
}

/// No code of this OS's own runs between fork and exec here.
#[derive(Debug)]
pub enum ChildHook {}

impl ChildHook {
    /// Never called: there is no value to call it on.
    pub fn run(&self) -> std::io::Result<()> {
        match *self {}
    }
}

/// Calls `f` with every descriptor this process has open, listed by
/// `proc_pidinfo(getpid(), PROC_PIDLISTFDS)` into a buffer on the stack (no
/// allocation, no lock: a forked child may call it before exec; libproc's
/// calls are thin wrappers of the `proc_info` system call). A process with
/// more than the buffer's 2048 descriptors has only the first 2048 listed.
///
/// # References
/// - xnu `bsd/sys/proc_info.h` (`PROC_PIDLISTFDS`, `struct proc_fdinfo`):
///   <https://github.com/apple-oss-distributions/xnu/blob/main/bsd/sys/proc_info.h>
pub fn each_open_fd(f: &mut dyn FnMut(RawFd)) -> io::Result<()> {
    let mut buf = [libc::proc_fdinfo {
        proc_fd: -1,
        proc_fdtype: 0,
    }; 2048];
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let n = list_fds_into(pid, Some(&mut buf));
    if n <= 0 {
        return Err(io::Error::last_os_error());
    }
    let count = n as usize / std::mem::size_of::<libc::proc_fdinfo>();
    for info in &buf[..count.min(buf.len())] {
        f(info.proc_fd);
    }
    Ok(())
}

/// Offset of `psi.soi_options` in `struct socket_fdinfo`: `proc_fileinfo` is
/// 24 bytes, then `socket_info` holds a 136-byte `vinfo_stat`, `soi_so`,
/// `soi_pcb` (8 each), `soi_type`, `soi_protocol`, `soi_family` (4 each),
/// then the `short soi_options`: 24 + 136 + 16 + 12 = 188.
const SOI_OPTIONS_OFFSET: usize = 188;

/// Whether the stream socket `fd` is listening. XNU has no `SO_ACCEPTCONN`
/// getsockopt, but `proc_pidfdinfo(PROC_PIDFDSOCKETINFO)` reports the
/// socket's `so_options`, in which `listen(2)` sets `SO_ACCEPTCONN`
/// (xnu `bsd/sys/socket.h`). No allocation: a forked child may call it.
pub fn is_listening(fd: BorrowedFd<'_>) -> bool {
    // 8-byte aligned, as socket_fdinfo is; 4 KiB exceeds its size. On the
    // stack: no allocation.
    let mut buf = FdinfoBuf([0; 4096]);
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let n = pidfdinfo_into(pid, fd.as_raw_fd(), PROC_PIDFDSOCKETINFO, &mut buf);
    if n < (SOI_OPTIONS_OFFSET + 2) as libc::c_int {
        return false;
    }
    // The short's two bytes, in native order.
    let options = i16::from_ne_bytes([buf.0[SOI_OPTIONS_OFFSET], buf.0[SOI_OPTIONS_OFFSET + 1]]);
    options & (libc::SO_ACCEPTCONN as i16) != 0
}

/// A child of `fix::spawn` on macOS: its pid, and its status once reaped.
#[derive(Debug)]
pub struct SpawnedProcess {
    pid: libc::pid_t,
    status: Option<std::process::ExitStatus>,
}

impl SpawnedProcess {
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// SIGKILL; a child already reaped is left alone (its pid may be reused).
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        super::kill_pid(self.pid)
    }

    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = std::process::ExitStatus::from_raw(super::wait_pid(self.pid)?);
        self.status = Some(status);
        Ok(status)
    }

    pub fn try_wait(&mut self) -> io::Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let pid = rustix::process::Pid::from_raw(self.pid)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG) {
            Ok(Some((_, raw))) => {
                let status = std::process::ExitStatus::from_raw(raw.as_raw());
                self.status = Some(status);
                Ok(Some(status))
            }
            Ok(None) | Err(rustix::io::Errno::INTR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

unsafe extern "C" {
    /// Apple's `posix_spawn_file_actions_addinherit_np(3)` (macOS 10.7): the
    /// descriptor survives `POSIX_SPAWN_CLOEXEC_DEFAULT`. Not in the libc crate.
    fn posix_spawn_file_actions_addinherit_np(
        actions: *mut libc::posix_spawn_file_actions_t,
        fd: libc::c_int,
    ) -> libc::c_int;
}

fn errno(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::from_raw_os_error(rc);
    Err(io::Error::new(e.kind(), format!("{what}: {e}")))
}

fn c_string(s: &std::ffi::OsStr) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{s:?} holds a NUL byte"),
        )
    })
}

/// `posix_spawn_file_actions_addinherit_np(fd)`.
fn add_inherit(spawner: &mut super::Spawner, fd: RawFd) -> io::Result<()> {
    // SAFETY: records an inherit action in the initialised actions object.
    let rc = unsafe { posix_spawn_file_actions_addinherit_np(spawner.actions(), fd) };
    errno(rc, "posix_spawn_file_actions_addinherit_np")
}

/// `fix::spawn` on macOS: the helper's own `posix_spawn` with
/// `POSIX_SPAWN_CLOEXEC_DEFAULT`, so the kernel closes at exec every
/// descriptor that no file action names; stdio and the kept descriptors are
/// named with `posix_spawn_file_actions_addinherit_np` (or set up by
/// `adddup2`/`addopen`). As std does for its children, the child inherits
/// the signal mask and gets SIGPIPE's default action back (std's
/// `library/std/src/sys/process/unix/unix.rs`: "Inherit the signal mask from
/// this process rather than resetting it"); Linux's clone path does the same.
///
/// # References
/// - Apple, `man 3 posix_spawnattr_setflags` (`POSIX_SPAWN_CLOEXEC_DEFAULT`)
/// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_spawn.html>
pub fn spawn_isolated(
    cmd: &super::IsolatedSpawn,
    stdio: [super::SpawnStdio; 3],
) -> io::Result<super::Spawned> {
    use super::SpawnStdio as Stdio;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    // Everything the spawn reads is prepared first.
    let program = c_string(&cmd.program)?;
    let mut argv = vec![program.clone()];
    for a in &cmd.args {
        argv.push(c_string(a)?);
    }
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = if cmd.env_clear {
        Vec::new()
    } else {
        std::env::vars_os().collect()
    };
    for (key, value) in &cmd.env {
        env.retain(|(k, _)| k != key);
        if let Some(v) = value {
            env.push((key.clone(), v.clone()));
        }
    }
    let mut envp = Vec::with_capacity(env.len());
    for (k, v) in &env {
        let mut kv = k.clone();
        kv.push("=");
        kv.push(v);
        envp.push(c_string(&kv)?);
    }
    let (argv, envp) = (super::CStrArray::new(argv), super::CStrArray::new(envp));
    let cwd = cmd
        .cwd
        .as_deref()
        .map(|d| c_string(d.as_os_str()))
        .transpose()?;

    let mut spawner = super::Spawner::new()?;
    // Pipes for Piped: the parent's ends by stdio number; the child's ends
    // stay open until the spawn returns.
    let mut parent_ends: [Option<OwnedFd>; 3] = [None, None, None];
    // Kept open until the spawn returns: pipe ends and /dev/null, each
    // close-on-exec here and dup2'd onto stdio in the child.
    let mut child_ends: Vec<OwnedFd> = Vec::new();
    for (fd, how) in stdio.iter().enumerate() {
        let fd = fd as libc::c_int;
        match how {
            Stdio::Inherit => add_inherit(&mut spawner, fd)?,
            Stdio::Null => {
                let null = std::fs::File::options()
                    .read(fd == 0)
                    .write(fd != 0)
                    .open("/dev/null")?;
                spawner.dup2(null.as_raw_fd(), fd)?;
                child_ends.push(null.into());
            }
            Stdio::Piped => {
                // Two steps inside std on macOS (no pipe2); both ends end up close-on-exec.
                let (reader, writer) = io::pipe()?;
                let (parent, child): (OwnedFd, OwnedFd) = if fd == 0 {
                    (writer.into(), reader.into())
                } else {
                    (reader.into(), writer.into())
                };
                spawner.dup2(child.as_raw_fd(), fd)?;
                parent_ends[fd as usize] = Some(parent);
                child_ends.push(child);
            }
        }
    }
    for &fd in &cmd.keep {
        add_inherit(&mut spawner, fd)?;
    }
    if let Some(dir) = &cwd {
        // SAFETY: records a chdir action (macOS 10.15); dir outlives the spawn.
        let rc =
            unsafe { libc::posix_spawn_file_actions_addchdir_np(spawner.actions(), dir.as_ptr()) };
        errno(rc, "posix_spawn_file_actions_addchdir_np")?;
    }
    let mut pipe_only = super::SigSet::empty();
    pipe_only.add(super::Signal::SIGPIPE);
    spawner.set_sigdefault(&pipe_only)?;
    // The probe's sham switches off only the fix.
    let fix = if cmd.sham {
        0
    } else {
        libc::POSIX_SPAWN_CLOEXEC_DEFAULT
    };
    let flags = fix | libc::POSIX_SPAWN_SETSIGDEF;
    spawner.set_flags(flags as libc::c_short)?;
    let search = !cmd.program.as_bytes().contains(&b'/');
    let spawned = spawner.spawn(&program, &argv, &envp, search);
    drop(child_ends);
    // ENOENT, EACCES…: the kind is the errno's, as std's failed exec.
    let pid = spawned?;
    let [stdin, stdout, stderr] = parent_ends;
    Ok(super::Spawned {
        stdin: stdin.map(std::process::ChildStdin::from),
        stdout: stdout.map(std::process::ChildStdout::from),
        stderr: stderr.map(std::process::ChildStderr::from),
        process: SpawnedProcess { pid, status: None },
    })
}
