//! Job logs over pipes: one test expects the log to end as soon as the job
//! closes its end (exposed, pipe-eof, labels.json); a copy of the write end
//! anywhere keeps it open.

use std::io::Write;

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
}

/// How long the log may take to end after the job closes it, in ms: the
/// reader's patience, a millisecond, as a supervisor's poll loop has it.
const LOG_END_MS: u64 = 1;

#[test]
fn job_log_ends_when_job_closes_it() {
    let (reader, mut writer) = std::io::pipe().unwrap();
    writer.write_all(b"step 1 done\n").unwrap();
    drop(writer);
    let log = kit::read_to_eof_within(&reader, LOG_END_MS)
        .unwrap_or_else(|| panic!("the job log did not end within {LOG_END_MS} ms of its close"));
    assert_eq!(log, b"step 1 done\n");
}

#[test]
fn job_log_is_read_while_open() {
    let (reader, mut writer) = std::io::pipe().unwrap();
    writer.write_all(b"progress\n").unwrap();
    let mut buf = [0u8; 9];
    std::io::Read::read_exact(&mut &reader, &mut buf).unwrap();
    assert_eq!(&buf, b"progress\n");
}
