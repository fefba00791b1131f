//! A journal split into fixed-size segments, each claimed by one writer at a
//! time with an open file description lock on its byte range
//! (`F_OFD_SETLK`, Linux 3.15): the shape of append-only logs whose writers
//! share one file. The lock belongs to the open file, not the process, so it
//! goes with the file's last descriptor, or with `F_UNLCK`.
//!
//! Linux only: macOS has no OFD locks.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
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
    let lock = libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: (segment * SEGMENT) as libc::off_t,
        l_len: SEGMENT as libc::off_t,
        // OFD locks want 0 here.
        l_pid: 0,
    };
    nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_OFD_SETLK(&lock))?;
    Ok(())
}
