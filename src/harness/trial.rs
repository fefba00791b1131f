//! One trial: the [`Trial`] a trial function gets (its window, scratch paths,
//! tallies), opening its window and proving the window's child (or holder)
//! holds the trial's own descriptor, and the [`Fault`]s a trial can end in.

use std::io;
use std::os::fd::RawFd;

use crate::report::tallies::{COPY_HELD, COPY_NONE, COPY_TALLY};
use crate::report::verdict::{Tallies, Window};
use fdwindow_fix::base::child::{HeldChild, InheritingChild};
use fdwindow_fix::base::holder::CopyHolder;
use fdwindow_fix::base::scratch::Scratch;

/// Why a trial could not say whether the hazard showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The OS lacks the call or flag: the arm is `unsupported`.
    Unsupported(String),
    /// Setup failed: the arm is `broken`.
    Broken(String),
    /// This trial's window could not be confirmed (the child was not seen
    /// holding the copy, a thread was not seen parked, a deadline expired):
    /// the trial is excluded and counted in `broken_trials`.
    NotConfirmed(String),
}

/// Attaches the failing step to an `io::Error`.
pub trait Context<T> {
    /// Any error means setup failed.
    fn ctx(self, step: &str) -> Result<T, Fault>;
    /// `ENOSYS`, `EINVAL`, `EOPNOTSUPP` and `ENOTSUP` (45 on macOS) mean the OS
    /// lacks the feature ([`fdwindow_fix::base::errno::UNSUPPORTED`]); other errors mean setup failed.
    fn ctx_feature(self, step: &str) -> Result<T, Fault>;
}

impl<T> Context<T> for io::Result<T> {
    fn ctx(self, step: &str) -> Result<T, Fault> {
        self.map_err(|e| Fault::Broken(format!("{step}: {e}")))
    }

    fn ctx_feature(self, step: &str) -> Result<T, Fault> {
        self.map_err(|e| match e.raw_os_error() {
            Some(n) if fdwindow_fix::base::errno::UNSUPPORTED.contains(&n) => {
                Fault::Unsupported(format!("{step}: {e}"))
            }
            _ => Fault::Broken(format!("{step}: {e}")),
        })
    }
}

/// What a trial function gets: its window, fresh scratch paths, and a place to
/// tally extra measurements.
#[derive(Debug)]
pub struct Trial<'a> {
    pub(super) window: Window,
    pub(super) scratch: &'a Scratch,
    /// With `--hold-by pass`: the fork window passes the trial's descriptor
    /// here instead of forking a child.
    pub(super) holder: Option<&'a CopyHolder>,
    pub(super) tallies: &'a mut Tallies,
    /// Set by [`Trial::own_spawn`]: this trial spawned (and checked) its own
    /// child, which is then the race window's unit instead of the race
    /// thread's spawns.
    pub(super) own_spawn: bool,
    /// Set by [`Trial::during_window`] once a child held the window open: a
    /// fork-window or inherited trial that never opened one is unconfirmed.
    pub(super) opened: bool,
    /// Whether the arm declares `no_copy` for this window: a child holding
    /// none of the trial's descriptor does not leave the trial unconfirmed.
    pub(super) copy_waived: bool,
    /// Paths handed out, removed when the trial ends: tens of thousands of
    /// race trials must not pile up files for the scratch folder's removal.
    pub(super) paths: std::cell::RefCell<Vec<std::path::PathBuf>>,
    /// Short folders for Unix-domain socket paths, removed when the trial ends.
    pub(super) socket_dirs: std::cell::RefCell<Vec<fdwindow_fix::base::sockets::SocketDir>>,
}

impl Trial<'_> {
    /// The window this trial runs in.
    pub fn window(&self) -> Window {
        self.window
    }

    /// A scratch path no other trial uses; whatever is created there is
    /// removed when the trial ends.
    pub fn fresh_path(&self, stem: &str) -> std::path::PathBuf {
        let path = self.scratch.fresh(stem);
        self.paths.borrow_mut().push(path.clone());
        path
    }

    /// A path for a Unix-domain socket that no other trial uses, short enough
    /// for every OS's `sun_path` (macOS allows 103 bytes where the scratch
    /// folder under a long `TMPDIR` would not fit: see
    /// [`fdwindow_fix::base::sockets::SocketDir`]); removed with its folder when the trial ends.
    pub fn socket_path(&self, stem: &str) -> Result<std::path::PathBuf, Fault> {
        let dir = fdwindow_fix::base::sockets::SocketDir::new().ctx("make the socket folder")?;
        let path = dir.path(stem).ctx("build the socket path")?;
        self.socket_dirs.borrow_mut().push(dir);
        Ok(path)
    }

    /// Says that this trial spawned the one child its hit is about (e.g. a
    /// holder whose descriptors are listed): in a race window that spawn, not
    /// the race thread's, is the trial; in a fork-window or inherited trial
    /// it is the window, which the trial opened itself. Call it in every
    /// trial of the arm.
    pub fn own_spawn(&mut self) {
        self.own_spawn = true;
    }

    /// Counts one trial's value of a named quantity (e.g. `"client" = "reset"`).
    pub fn tally(&mut self, quantity: &str, value: &str) {
        *self
            .tallies
            .entry(quantity.to_owned())
            .or_default()
            .entry(value.to_owned())
            .or_default() += 1;
    }

    /// Runs `act` while a child holds copies of this process's descriptors, as
    /// the window kind says: a child parked between fork and exec, an exec'd
    /// child holding those without close-on-exec, or (posix-spawn) the race
    /// thread already running. `fd` is the trial's own descriptor, the one
    /// the hazard is about, open when this is called: in a fork-window or
    /// inherited trial the child must hold the same open file
    /// ([`fdwindow_fix::sys::same_open_file`]), or the trial is unconfirmed
    /// (unless the arm declares `no_copy` here); each such trial tallies
    /// [`COPY_TALLY`]. Create what the child must copy before calling.
    pub fn during_window<T>(
        &mut self,
        fd: RawFd,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        self.open_window(Some(fd), act)
    }

    /// [`Trial::during_window`] for a trial with no descriptor of its own
    /// for the child to copy (a fix whose point is that there is none, such
    /// as a port the server binds itself): the child holds none, so the arm
    /// must declare `no_copy` for the window.
    pub fn during_bare_window<T>(
        &mut self,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        self.open_window(None, act)
    }

    fn open_window<T>(
        &mut self,
        fd: Option<RawFd>,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        match (self.window, self.holder) {
            (Window::ForkWindow, Some(holder)) => self.passed_copy_window(holder, fd, act),
            (Window::ForkWindow, None) => {
                let held = HeldChild::hold()
                    .map_err(|e| holder_fault("hold a child in the fork window", e))?;
                self.opened = true;
                // On an error the child is let go and reaped by its drop.
                self.check_copy(held.pid(), fd)?;
                let result = act();
                held.release().ctx("release the held child")?;
                result
            }
            (Window::Inherited, _) => {
                let child = InheritingChild::spawn()
                    .map_err(|e| holder_fault("spawn the inheriting child", e))?;
                self.opened = true;
                self.check_copy(child.pid(), fd)?;
                let result = act();
                child.release().ctx("release the inheriting child")?;
                result
            }
            // The parked-call window is built by its own probe around the
            // creating call; there is nothing to open here.
            (Window::PosixSpawn | Window::ParkedCall | Window::InProcess, _) => act(),
        }
    }

    /// The fork window held by a copy of `fd` passed to `holder` (`--hold-by
    /// pass`), checked as a forked child's copy is, though at its own number.
    fn passed_copy_window<T>(
        &mut self,
        holder: &CopyHolder,
        fd: Option<RawFd>,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        // SAFETY: the caller's descriptor, open for this call.
        let borrow = |fd| unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let theirs = fd
            .map(|fd| holder.hold(borrow(fd)))
            .transpose()
            .map_err(|e| holder_fault("pass the copy to the holder", e))?;
        self.opened = true;
        let copied = match (fd, theirs) {
            (Some(ours), Some(theirs)) => {
                fdwindow_fix::sys::same_open_file_as(holder.pid(), theirs, ours)
                    .map_err(|e| copy_fault(ours, e))
            }
            _ => Ok(false),
        };
        let result = copied.and_then(|copied| {
            self.tally(COPY_TALLY, if copied { COPY_HELD } else { COPY_NONE });
            self.confirm_copy(copied)?;
            act()
        });
        // Every path lets the holder close its copy before the next trial.
        holder.release().ctx("let the holder close its copies")?;
        result
    }

    /// For a trial that spawned its own child ([`Trial::own_spawn`]) while
    /// its `fds` are open: whether child `pid` holds the same open file as
    /// any of them, tallied once as [`COPY_TALLY`]. A child holding none
    /// does not refuse the trial, as in [`Trial::during_window`]: here the
    /// copy is what the trial measures, compared by identity, not number.
    pub fn child_holds(&mut self, pid: u32, fds: &[RawFd]) -> Result<bool, Fault> {
        let mut copied = false;
        for &fd in fds {
            copied |= same_open_file(pid, fd)?;
        }
        self.tally(COPY_TALLY, if copied { COPY_HELD } else { COPY_NONE });
        Ok(copied)
    }

    /// For a trial that opens its window by hand ([`Trial::own_spawn`]) and
    /// needs the copy to mean anything: the check [`Trial::during_window`]
    /// makes, that child `pid` holds the trial's `fd`.
    pub fn require_copy(&mut self, pid: u32, fd: RawFd) -> Result<(), Fault> {
        self.check_copy(pid, Some(fd))
    }

    /// Tallies whether the window's child `pid` holds the trial's `fd` (the
    /// same open file), and refuses the trial when it must and does not.
    fn check_copy(&mut self, pid: u32, fd: Option<RawFd>) -> Result<(), Fault> {
        // No descriptor of its own: the child holds none, tallied as such.
        let copied = self.child_holds(pid, fd.as_slice())?;
        self.confirm_copy(copied)
    }

    /// Refuses the trial when the window holds no copy and the arm needs one.
    fn confirm_copy(&self, copied: bool) -> Result<(), Fault> {
        if copied || self.copy_waived {
            Ok(())
        } else {
            Err(Fault::NotConfirmed(NO_COPY.into()))
        }
    }
}

/// [`fdwindow_fix::sys::same_open_file`], its failure a fault: unsupported
/// where the OS cannot tell, else the trial is unconfirmed.
pub(super) fn same_open_file(pid: u32, fd: RawFd) -> Result<bool, Fault> {
    fdwindow_fix::sys::same_open_file(pid, fd).map_err(|e| copy_fault(fd, e))
}

/// A failed comparison of a copy of `fd`, as a fault.
pub(super) fn copy_fault(fd: RawFd, e: io::Error) -> Fault {
    let why = format!("compare the child's copy of descriptor {fd}: {e}");
    match e.kind() {
        io::ErrorKind::Unsupported => Fault::Unsupported(why),
        _ => Fault::NotConfirmed(why),
    }
}

/// Why a trial whose window's child held no copy of its descriptor is
/// unconfirmed (where its arm does not declare `no_copy`).
pub const NO_COPY: &str = "the window's child held no copy of the trial's descriptor";

/// Why a fork-window or inherited trial that never opened its window is
/// unconfirmed.
pub const NEVER_OPENED: &str =
    "the trial never opened its window: no child held its descriptors (Trial::during_window)";

/// A window's holder that failed to start: a child that never reached the
/// window (or never echoed its exec) in time leaves the trial unconfirmed,
/// which is not a setup failure; any other error is.
pub(super) fn holder_fault(what: &str, e: io::Error) -> Fault {
    if e.kind() == io::ErrorKind::TimedOut {
        Fault::NotConfirmed(format!("{what}: {e}"))
    } else {
        Fault::Broken(format!("{what}: {e}"))
    }
}
