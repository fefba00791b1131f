//! A key-value store in one file, locked while open so two processes never
//! write it at once: the shape of many crates' on-disk caches.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::Path;

/// An open store: its file, locked (`flock(LOCK_EX)`) for as long as the
/// store is open, and its entries.
pub struct Store {
    file: File,
    entries: BTreeMap<String, String>,
}

impl Store {
    /// Opens (creating) the store at `path`; `WouldBlock` while another
    /// open store holds its lock.
    pub fn open(path: &Path) -> io::Result<Store> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let entries = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Ok(Store { file, entries })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    pub fn put(&mut self, key: &str, value: &str) {
        self.entries.insert(key.to_owned(), value.to_owned());
    }

    /// Writes the entries back to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        let text: String = self
            .entries
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(text.as_bytes())
    }
}

/// Opens the store at `path`, runs `f` on it, writes it back and closes it.
/// The lock goes with the file's last descriptor: closing without
/// `LOCK_UN` leaves it to any copy a child still has (flock-survival).
pub fn with_store<T>(path: &Path, f: impl FnOnce(&mut Store) -> T) -> io::Result<T> {
    let mut store = Store::open(path)?;
    let out = f(&mut store);
    store.flush()?;
    drop(store);
    Ok(out)
}
