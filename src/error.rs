//! fdwindow's one error type: why a command, a load or a run stopped, with
//! what it was doing, and the exit status that says so (DESIGN.md: bad input
//! exits 2, an interruption 128 + the signal, any other failure 1).

use std::fmt::Display;
use std::io;
use std::process::ExitCode;

/// Why something fdwindow was asked to do did not complete.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a flag, a hazard name, a file or folder that is not what
    /// it must be. One line, exit status 2.
    #[error("{0}")]
    Usage(String),
    /// A file fdwindow reads (a results, costs, pressure, timing or audit
    /// file) that is missing, malformed, or of another schema: the file, and
    /// what is wrong with it. Bad input: exit status 2.
    #[error("{}: {problem}", path.display())]
    BadFile {
        /// The file (or folder).
        path: std::path::PathBuf,
        /// What is wrong with it, in one line.
        problem: String,
    },
    /// A file or system operation failed: what was being done, and the OS's
    /// error. Exit status 1.
    #[error("{context}: {source}")]
    Io {
        /// What fdwindow was doing ("write results/MATRIX.md").
        context: String,
        /// The OS's error.
        #[source]
        source: io::Error,
    },
    /// Something outside the input failed: a tool, a guest, a child.
    /// Exit status 1.
    #[error("{0}")]
    Failed(String),
    /// SIGINT, SIGTERM or SIGHUP arrived: children were killed and reaped,
    /// nothing half-written was kept. Exit status 128 + the signal.
    #[error("interrupted")]
    Interrupted,
}

/// A result whose error is fdwindow's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::Usage`] with a `format!` message: bad input, in one line.
macro_rules! usage {
    ($($arg:tt)*) => {
        $crate::error::Error::Usage(format!($($arg)*))
    };
}
pub(crate) use usage;

/// [`Error::Failed`] with a `format!` message.
macro_rules! failed {
    ($($arg:tt)*) => {
        $crate::error::Error::Failed(format!($($arg)*))
    };
}
pub(crate) use failed;

impl Error {
    /// Bad input, said in one line.
    pub fn usage(message: impl Display) -> Error {
        Error::Usage(message.to_string())
    }

    /// A failure that is not the input's fault.
    pub fn failed(message: impl Display) -> Error {
        Error::Failed(message.to_string())
    }

    /// For `map_err`: an I/O error while doing `context`.
    pub fn io(context: impl Display) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io {
            context: context.to_string(),
            source,
        }
    }

    /// The same error, its message led by `what` ("results/x.json: …"); an
    /// interruption stays as it is.
    pub fn context(self, what: impl Display) -> Error {
        match self {
            Error::Usage(m) => Error::Usage(format!("{what}: {m}")),
            Error::BadFile { path, problem } => Error::BadFile {
                path,
                problem: format!("{what}: {problem}"),
            },
            Error::Failed(m) => Error::Failed(format!("{what}: {m}")),
            Error::Io { context, source } => Error::Io {
                context: format!("{what}: {context}"),
                source,
            },
            Error::Interrupted => Error::Interrupted,
        }
    }

    /// The exit status this error ends a command with: 2 for bad input,
    /// 128 + N for signal N, 1 otherwise.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(_) | Error::BadFile { .. } => ExitCode::from(2),
            Error::Interrupted => fdwindow_fix::base::interrupts::exit_code(),
            Error::Io { .. } | Error::Failed(_) => ExitCode::FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_ends_with_its_own_status_and_keeps_its_kind_under_context() {
        let usage = Error::usage("no probe for hazard \"x\"").context("fdwindow run");
        assert_eq!(usage.to_string(), "fdwindow run: no probe for hazard \"x\"");
        assert_eq!(usage.exit_code(), ExitCode::from(2));
        let io = Error::io("write MATRIX.md")(io::Error::from_raw_os_error(libc::ENOSPC));
        let io = io.context("results");
        assert!(
            io.to_string().starts_with("results: write MATRIX.md: "),
            "{io}"
        );
        assert!(std::error::Error::source(&io).is_some());
        assert_eq!(io.exit_code(), ExitCode::FAILURE);
        assert!(
            matches!(Error::failed("qemu").context("boot"), Error::Failed(m) if m == "boot: qemu")
        );
        assert!(matches!(
            Error::Interrupted.context("x"),
            Error::Interrupted
        ));
    }
}
