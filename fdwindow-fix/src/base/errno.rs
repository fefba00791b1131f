//! Errno names: probes record what a call returned as its symbolic name
//! (`EADDRINUSE`), which means the same on every OS, rather than its number,
//! which does not (ENOTCONN is 107 on Linux and 57 on macOS).

use std::io;

/// The names this crate can print, with this target's values. Where two names
/// share a value on one OS (EAGAIN and EWOULDBLOCK everywhere; EOPNOTSUPP and
/// ENOTSUP on Linux), the first listed wins.
const NAMES: &[(libc::c_int, &str)] = &[
    (libc::EPERM, "EPERM"),
    (libc::ENOENT, "ENOENT"),
    (libc::ESRCH, "ESRCH"),
    (libc::EINTR, "EINTR"),
    (libc::EIO, "EIO"),
    (libc::E2BIG, "E2BIG"),
    (libc::ENOEXEC, "ENOEXEC"),
    (libc::EBADF, "EBADF"),
    (libc::ECHILD, "ECHILD"),
    (libc::EAGAIN, "EAGAIN"),
    (libc::ENOMEM, "ENOMEM"),
    (libc::EACCES, "EACCES"),
    (libc::EFAULT, "EFAULT"),
    (libc::EBUSY, "EBUSY"),
    (libc::EEXIST, "EEXIST"),
    (libc::EXDEV, "EXDEV"),
    (libc::ENOTDIR, "ENOTDIR"),
    (libc::EISDIR, "EISDIR"),
    (libc::EINVAL, "EINVAL"),
    (libc::ENFILE, "ENFILE"),
    (libc::EMFILE, "EMFILE"),
    (libc::ETXTBSY, "ETXTBSY"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::ESPIPE, "ESPIPE"),
    (libc::EROFS, "EROFS"),
    (libc::EPIPE, "EPIPE"),
    (libc::ERANGE, "ERANGE"),
    (libc::EDEADLK, "EDEADLK"),
    (libc::ENAMETOOLONG, "ENAMETOOLONG"),
    (libc::ENOLCK, "ENOLCK"),
    (libc::ENOSYS, "ENOSYS"),
    (libc::ENOTEMPTY, "ENOTEMPTY"),
    (libc::ELOOP, "ELOOP"),
    (libc::ENOTSOCK, "ENOTSOCK"),
    (libc::EDESTADDRREQ, "EDESTADDRREQ"),
    (libc::EMSGSIZE, "EMSGSIZE"),
    (libc::EPROTOTYPE, "EPROTOTYPE"),
    (libc::ENOPROTOOPT, "ENOPROTOOPT"),
    (libc::EPROTONOSUPPORT, "EPROTONOSUPPORT"),
    (libc::EOPNOTSUPP, "EOPNOTSUPP"),
    (libc::ENOTSUP, "ENOTSUP"),
    (libc::EAFNOSUPPORT, "EAFNOSUPPORT"),
    (libc::EADDRINUSE, "EADDRINUSE"),
    (libc::EADDRNOTAVAIL, "EADDRNOTAVAIL"),
    (libc::ENETDOWN, "ENETDOWN"),
    (libc::ENETUNREACH, "ENETUNREACH"),
    (libc::ECONNABORTED, "ECONNABORTED"),
    (libc::ECONNRESET, "ECONNRESET"),
    (libc::ENOBUFS, "ENOBUFS"),
    (libc::EISCONN, "EISCONN"),
    (libc::ENOTCONN, "ENOTCONN"),
    (libc::ESHUTDOWN, "ESHUTDOWN"),
    (libc::ETIMEDOUT, "ETIMEDOUT"),
    (libc::ECONNREFUSED, "ECONNREFUSED"),
    (libc::EHOSTUNREACH, "EHOSTUNREACH"),
    (libc::EALREADY, "EALREADY"),
    (libc::EINPROGRESS, "EINPROGRESS"),
];

/// The symbolic name of an errno value on this OS, e.g. `EADDRINUSE`; an
/// unlisted value prints as `errno <n>`.
pub fn errno_name(code: libc::c_int) -> String {
    NAMES
        .iter()
        .find(|(value, _)| *value == code)
        .map_or_else(|| format!("errno {code}"), |(_, name)| (*name).to_owned())
}

/// What an `io::Result` says, as a measurement: `ok`, an errno name, or (for
/// an error that carries no errno) its text.
pub fn outcome_name<T>(result: &io::Result<T>) -> String {
    match result {
        Ok(_) => "ok".to_owned(),
        Err(e) => error_name(e),
    }
}

/// An error's errno name, or its text when it carries no errno.
pub fn error_name(e: &io::Error) -> String {
    e.raw_os_error().map_or_else(|| e.to_string(), errno_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_this_targets_values() {
        assert_eq!(errno_name(libc::EADDRINUSE), "EADDRINUSE");
        assert_eq!(errno_name(libc::ENOTCONN), "ENOTCONN");
        assert_eq!(errno_name(libc::EWOULDBLOCK), "EAGAIN");
        assert_eq!(errno_name(-7), "errno -7");
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(outcome_name::<()>(&Err(refused)), "ECONNREFUSED");
        assert_eq!(outcome_name(&Ok(3)), "ok");
        assert_eq!(error_name(&io::Error::other("no errno")), "no errno");
    }
}

/// The errno values that say the OS lacks a call or flag, not that setup
/// failed: `ENOSYS` (no such call), `EINVAL` (Linux's answer to an unknown
/// flag), `EOPNOTSUPP` and `ENOTSUP`. On Linux the last two are one value
/// (95); on macOS they differ, `ENOTSUP` is 45 and `EOPNOTSUPP` 102
/// (xnu `bsd/sys/errno.h`), and libSystem returns `ENOTSUP` for operations
/// it does not support.
pub const UNSUPPORTED: [libc::c_int; 4] =
    [libc::ENOSYS, libc::EINVAL, libc::EOPNOTSUPP, libc::ENOTSUP];

/// Whether `e` says the OS lacks the feature ([`UNSUPPORTED`], or
/// `ErrorKind::Unsupported` from code that knows without asking the kernel).
pub fn means_unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
        || e.raw_os_error().is_some_and(|n| UNSUPPORTED.contains(&n))
}

/// Whether `e`, from creating a socket with a close-on-exec type flag, says
/// the flag is unknown here: Linux answers `EINVAL`, xnu's `socreate`
/// answers `EPROTONOSUPPORT` or `EPROTOTYPE` for type bits it does not know
/// (xnu `bsd/kern/uipc_socket.c`, `socreate_internal`).
pub fn means_flag_unknown(e: &io::Error) -> bool {
    means_unsupported(e)
        || e.raw_os_error()
            .is_some_and(|n| n == libc::EPROTONOSUPPORT || n == libc::EPROTOTYPE)
}

#[cfg(test)]
mod unsupported_tests {
    use super::*;

    #[test]
    fn enotsup_and_unknown_type_bits_read_as_unsupported() {
        for n in [libc::ENOSYS, libc::EINVAL, libc::EOPNOTSUPP, libc::ENOTSUP] {
            assert!(means_unsupported(&io::Error::from_raw_os_error(n)), "{n}");
        }
        assert!(!means_unsupported(&io::Error::from_raw_os_error(
            libc::EPROTOTYPE
        )));
        for n in [libc::EPROTONOSUPPORT, libc::EPROTOTYPE, libc::EINVAL] {
            assert!(means_flag_unknown(&io::Error::from_raw_os_error(n)), "{n}");
        }
        assert!(!means_flag_unknown(&io::Error::from_raw_os_error(
            libc::EMFILE
        )));
        assert!(means_unsupported(&io::Error::new(
            io::ErrorKind::Unsupported,
            "no such call"
        )));
    }
}
