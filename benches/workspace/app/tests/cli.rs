//! The command-line tests: programs run for their status and output, half
//! again as many as the other binaries run. Nothing here is exposed.

use std::process::{Command, Stdio};

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
    if i.is_multiple_of(2) {
        kit::busy::program_status();
    }
}

#[test]
fn shell_pipeline_output() {
    let out = Command::new("sh")
        .args(["-c", "printf 'a\\nb\\n' | wc -l"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
}
