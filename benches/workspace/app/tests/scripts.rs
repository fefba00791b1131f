//! Generated scripts: one test writes a script and runs it at once
//! (exposed, etxtbsy, labels.json): a copy of its write descriptor anywhere
//! makes the exec fail with ETXTBSY.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use kit::ScratchDir;

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
}

#[test]
fn generated_script_runs() {
    let dir = ScratchDir::new("script");
    let path = dir.join("step.sh");
    let mut script = std::fs::File::create(&path).unwrap();
    script.write_all(b"#!/bin/sh\nexit 0\n").unwrap();
    script
        .set_permissions(std::fs::Permissions::from_mode(0o755))
        .unwrap();
    drop(script);
    let status = Command::new(&path)
        .stdin(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
    assert!(status.success());
}

#[test]
fn script_read_by_the_shell_runs() {
    let dir = ScratchDir::new("sh");
    let path = dir.join("step.sh");
    std::fs::write(&path, "exit 0\n").unwrap();
    let status = Command::new("sh")
        .arg(&path)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}
