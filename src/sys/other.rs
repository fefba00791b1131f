//! Other Unixes: uname only. fdwindow measures Linux and macOS; elsewhere it
//! compiles and labels its results with what uname says.

pub(crate) const OS_ID: Option<&str> = None;

pub(crate) fn os_release() -> Option<String> {
    None
}

pub(crate) fn id_version(_os_release: &str, kernel_release: &str) -> String {
    crate::platform::major_minor(kernel_release)
}

pub(crate) fn libc_name_version() -> (String, String) {
    ("libc".into(), String::new())
}

/// No open file description locks are known here.
pub(crate) const F_OFD_GETLK: Option<libc::c_int> = None;
/// See [`F_OFD_GETLK`].
pub(crate) const F_OFD_SETLK: Option<libc::c_int> = None;

/// No preload mechanism is assumed elsewhere; `fdwindow stress` says so.
pub(crate) const PRELOAD: Option<(&str, &str)> = None;
