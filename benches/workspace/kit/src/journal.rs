//! A journal split into fixed-size segments, each claimed by one writer at a
//! time with an open file description lock on its byte range
//! (`F_OFD_SETLK`, Linux 3.15): the shape of append-only logs whose writers
//! share one file. The lock belongs to the open file, not the process, so it
//! goes with the file's last descriptor, or with `F_UNLCK`.
//!
//! Linux only: macOS has no OFD locks.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// Bytes per segment.
pub const SEGMENT: u64 = 4096;

/// A writer holding one segment's lock.
pub struct Writer {
    file: File,
    segment: u64,
}

impl Writer {
    /// Opens the journal at `path` and claims `segment`; `WouldBlock` while
    /// another writer holds it.
    pub fn claim(path: &Path, segment: u64) -> io::Result<Writer> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        range_lock(&file, segment, libc::F_WRLCK)?;
        Ok(Writer { file, segment })
    }

    /// Appends `record` at the segment's start.
    pub fn write(&mut self, record: &[u8]) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(self.segment * SEGMENT))?;
        self.file.write_all(record)
    }

    /// Gives the segment up: unlocks it, then closes the file, so no copy
    /// of the descriptor keeps the claim.
    pub fn finish(self) -> io::Result<()> {
        range_lock(&self.file, self.segment, libc::F_UNLCK)
    }
}

/// `fcntl(F_OFD_SETLK)` of `kind` over one segment's bytes.
fn range_lock(file: &File, segment: u64, kind: libc::c_int) -> io::Result<()> {
    // SAFETY: a zeroed flock is valid; the fields set below are the lock.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = (segment * SEGMENT) as libc::off_t;
    lock.l_len = SEGMENT as libc::off_t;
    // SAFETY: fcntl reads the flock for the call; `file` stays open.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
