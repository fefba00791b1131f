//! Linux: the kernel release names the platform; glibc reports its own version;
//! open file description locks come from the libc crate.

pub(crate) const OS_ID: Option<&str> = Some("linux");

/// The distribution, from `os-release(5)`'s PRETTY_NAME.
pub(crate) fn os_release() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(line.trim_matches('"').to_owned())
}

/// On Linux the kernel's behaviour is what the probes measure, so its version
/// names the platform.
pub(crate) fn id_version(_os_release: &str, kernel_release: &str) -> String {
    crate::platform::major_minor(kernel_release)
}

#[cfg(target_env = "gnu")]
pub(crate) fn libc_name_version() -> (String, String) {
    unsafe extern "C" {
        /// glibc's `gnu_get_libc_version(3)`: the version of the glibc loaded now.
        fn gnu_get_libc_version() -> *const libc::c_char;
    }
    // SAFETY: returns a pointer to a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    ("glibc".into(), version.to_string_lossy().into_owned())
}

// musl has no call that reports its version; say so rather than guess.
#[cfg(not(target_env = "gnu"))]
pub(crate) fn libc_name_version() -> (String, String) {
    let name = if cfg!(target_env = "musl") {
        "musl"
    } else {
        "libc"
    };
    (name.into(), String::new())
}

/// `fcntl` commands for open file description locks (Linux 3.15).
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/fcntl.2.html> ("Open file description locks")
pub(crate) const F_OFD_GETLK: Option<libc::c_int> = Some(libc::F_OFD_GETLK);
/// See [`F_OFD_GETLK`].
pub(crate) const F_OFD_SETLK: Option<libc::c_int> = Some(libc::F_OFD_SETLK);

/// `close_range(first, ~0U, 0)`—Close every descriptor from `first` up (Linux 5.9).
///
/// A raw `syscall(2)`, so it is async-signal-safe (it may run in `pre_exec`)
/// and links against any glibc; `ENOSYS` (an older kernel) comes back as
/// `ErrorKind::Unsupported`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/close_range.2.html>
pub(crate) fn close_range_from(first: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: closes descriptors only; the caller owns what it closes.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    };
    if rc == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// vfork's kernel path is available on every Linux.
pub(crate) fn vfork_supported() -> std::io::Result<()> {
    Ok(())
}

/// What the vfork child reads and writes; it lives on the parent's stack,
/// which the child may touch because the parent's thread is suspended.
struct VforkArgs {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    stdio: libc::c_int,
    mask: libc::sigset_t,
    errno: libc::c_int,
}

/// The vfork child: async-signal-safe calls only, on its own stack.
extern "C" fn vfork_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's VforkArgs, alive until the parent resumes,
    // which happens only once this child has exec'd or exited.
    unsafe {
        let args = &mut *arg.cast::<VforkArgs>();
        for target in 0..3 {
            if libc::dup2(args.stdio, target) == -1 {
                args.errno = *libc::__errno_location();
                libc::_exit(127);
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &args.mask, std::ptr::null_mut());
        libc::execve(args.program, args.argv, args.envp);
        args.errno = *libc::__errno_location();
        libc::_exit(127)
    }
}

/// `clone(CLONE_VM|CLONE_VFORK|SIGCHLD)` then `execve`: what `vfork(2)` does
/// in the kernel (kernel/fork.c: vfork is `kernel_clone` with
/// `CLONE_VFORK|CLONE_VM` and `SIGCHLD`), with the child on a stack of its own.
///
/// Rust cannot call `vfork()` itself soundly: it returns twice into one stack
/// frame, and Rust has no `returns_twice` attribute to stop the optimiser from
/// keeping state across the first return. A separate stack avoids that; this
/// is how glibc's posix_spawn runs its child too. Every signal is blocked
/// around the clone, so no handler of the parent runs on the child's stack
/// before the child restores the mask just ahead of `execve`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/vfork.2.html>
/// - <https://man7.org/linux/man-pages/man2/clone.2.html>
/// - glibc `sysdeps/unix/sysv/linux/spawni.c` (`__spawnix`)
pub(crate) fn vfork_exec(
    program: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    stdio: std::os::fd::RawFd,
) -> std::io::Result<libc::pid_t> {
    assert!(argv.last().is_some_and(|p| p.is_null()) && envp.last().is_some_and(|p| p.is_null()));
    const STACK: usize = 64 * 1024;
    let mut stack = vec![0u8; STACK];
    // SAFETY: the stack outlives the child's use of it (the parent resumes only
    // after exec or exit); the masks are valid sigset_ts; VforkArgs outlives
    // the clone call.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut args = VforkArgs {
            program: program.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            stdio,
            mask: std::mem::zeroed(),
            errno: 0,
        };
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut args.mask);
        // Stacks grow down on every architecture Linux runs Rust on here; the
        // top is kept 16-byte aligned as the ABIs want.
        let top = (stack.as_mut_ptr().add(STACK) as usize & !15) as *mut libc::c_void;
        let pid = libc::clone(
            vfork_child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut args).cast(),
        );
        let clone_error = std::io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &args.mask, std::ptr::null_mut());
        if pid == -1 {
            return Err(clone_error);
        }
        let errno = std::ptr::read_volatile(&raw const args.errno);
        if errno != 0 {
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) == -1
                && *libc::__errno_location() == libc::EINTR
            {}
            return Err(std::io::Error::from_raw_os_error(errno));
        }
        Ok(pid)
    }
}

type AddClosefrom =
    unsafe extern "C" fn(*mut libc::posix_spawn_file_actions_t, libc::c_int) -> libc::c_int;

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), looked up at run
/// time so that the binary still runs on an older glibc or on musl.
fn addclosefrom_fn() -> Option<AddClosefrom> {
    static FN: std::sync::OnceLock<Option<AddClosefrom>> = std::sync::OnceLock::new();
    *FN.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; the symbol, if present,
        // has the documented signature.
        let sym = unsafe {
            libc::dlsym(
                libc::RTLD_DEFAULT,
                c"posix_spawn_file_actions_addclosefrom_np".as_ptr(),
            )
        };
        (!sym.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, AddClosefrom>(sym) })
    })
}

/// Whether this libc has `posix_spawn_file_actions_addclosefrom_np`.
pub(crate) fn addclosefrom_supported() -> std::io::Result<()> {
    addclosefrom_fn().map(|_| ()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this libc has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 added it)",
        )
    })
}

/// `posix_spawn_file_actions_addclosefrom_np(actions, from)`—Add a "close
/// every descriptor from `from` up" action (glibc 2.34).
///
/// # References
/// - <https://man7.org/linux/man-pages/man3/posix_spawn_file_actions_addclosefrom_np.3.html>
pub(crate) fn addclosefrom(
    actions: &mut libc::posix_spawn_file_actions_t,
    from: libc::c_int,
) -> std::io::Result<()> {
    addclosefrom_supported()?;
    let f = addclosefrom_fn().expect("checked");
    // SAFETY: an initialised file-actions object.
    match unsafe { f(actions, from) } {
        0 => Ok(()),
        rc => Err(std::io::Error::from_raw_os_error(rc)),
    }
}

/// `POSIX_SPAWN_CLOEXEC_DEFAULT` is Apple's; Linux has no such attribute.
pub(crate) fn spawn_cloexec_default_flag() -> std::io::Result<libc::c_short> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "POSIX_SPAWN_CLOEXEC_DEFAULT is an Apple extension; Linux's posix_spawn has no such flag",
    ))
}
