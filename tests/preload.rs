//! The injector shipped inside fdwindow (`shims/inject.c`) is a port of
//! `fdwindow::pressure`: it reads the same spec syntax, accepts what
//! `Spec::from_str` accepts and refuses the rest with the same message.
#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};

use fdwindow::pressure::Spec;

#[test]
fn injector_reads_the_spec_as_pressure_does() {
    let injector = common::injector();
    let scratch = common::scratch("preload-spec");
    let specs = [
        "",
        "threads=1",
        "threads=2,hold=250us,path=fork,for=2s",
        " threads=1 , path=spawn ,",
        "path=posix-spawn,max-alive=1,threads=2",
        "match=tru*,threads=1",
        "threads=0",
        "threads=1025",
        "threads",
        "hold=5",
        "hold=86401s",
        "hold=99999999999999999999s",
        "hold=2s,for=1s",
        "path=vfork",
        "colour=red",
        "match=",
    ];
    for (i, text) in specs.iter().enumerate() {
        let report = scratch.dir().join(format!("report-{i}"));
        let out = Command::new("/usr/bin/true")
            .env("LD_PRELOAD", injector.path())
            .env("FDWINDOW_PRESSURE", text)
            .env("FDWINDOW_PRESSURE_REPORT", &report)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{text:?}: {}", common::stderr(&out));
        assert!(out.stdout.is_empty(), "{text:?} wrote to stdout");
        let stderr = common::stderr(&out);
        match text.parse::<Spec>() {
            Ok(_) => {
                assert!(stderr.is_empty(), "{text:?}: {stderr}");
                let line = std::fs::read_to_string(&report)
                    .unwrap_or_else(|e| panic!("{text:?}: no report line: {e}"));
                let fields: Vec<&str> = line.trim_end().split(' ').collect();
                assert_eq!(fields.len(), 5, "{line}");
                assert_eq!(fields[4], "true", "{line}");
            }
            Err(e) => {
                assert!(
                    stderr.contains(&format!("FDWINDOW_PRESSURE: {e}; no pressure")),
                    "{text:?}: pressure says {e:?}, the injector {stderr:?}"
                );
                assert!(!report.exists(), "{text:?} started pressure");
            }
        }
    }
}
