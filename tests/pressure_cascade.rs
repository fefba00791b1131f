//! The injector never cascades and leaves nothing behind: a preloaded host's
//! pressure children carry neither the preload nor the config, no process
//! below them exists, and once the host exits no process of its tree is left.
//!
//! This file holds one test, so it runs as its own process under both cargo
//! test and nextest: it makes itself a child subreaper, which is process-wide.
#![cfg(target_os = "linux")]

mod common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// pid → parent pid for every process now.
fn parents() -> HashMap<i32, i32> {
    let mut map = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // The command name may hold spaces and parentheses: split after the last ')'.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue; // exited meanwhile
        };
        if let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
        {
            map.insert(pid, ppid);
        }
    }
    map
}

/// Depth of each descendant of `root` (children are 1).
fn descendants(root: i32) -> HashMap<i32, usize> {
    let map = parents();
    let mut depth = HashMap::new();
    for &pid in map.keys() {
        let (mut p, mut d) = (pid, 0);
        while let Some(&pp) = map.get(&p) {
            d += 1;
            if pp == root {
                depth.insert(pid, d);
                break;
            }
            if pp <= 1 || d > 64 {
                break;
            }
            p = pp;
        }
    }
    depth
}

fn environ_has(pid: i32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle))
}

#[test]
fn preloaded_pressure_never_cascades_and_process_count_returns_to_baseline() {
    // Orphans of the host are reparented here, so none can escape the count.
    rustix::process::set_child_subreaper(rustix::process::Pid::from_raw(std::process::id() as i32))
        .unwrap();
    let me = std::process::id() as i32;
    let baseline = descendants(me).len();
    let report = std::env::temp_dir().join(format!("fdwindow-cascade-{me}.report"));
    let _ = std::fs::remove_file(&report);
    let threads = 4;
    let injector = common::injector();
    let mut host = Command::new("/bin/sleep")
        .arg("0.4")
        .env("LD_PRELOAD", injector.path())
        .env(
            "FDWINDOW_PRESSURE",
            format!("threads={threads},hold=2ms,path=mix"),
        )
        .env("FDWINDOW_PRESSURE_REPORT", &report)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let host_pid = host.id() as i32;
    let host_exe = std::fs::read_link(format!("/proc/{host_pid}/exe")).ok();
    let (mut samples, mut max_alive) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    // Sample the tree while the host lives.
    while host.try_wait().unwrap().is_none() && Instant::now() < deadline {
        let tree = descendants(me);
        let below: Vec<(i32, usize)> = tree.into_iter().filter(|&(p, _)| p != host_pid).collect();
        for &(pid, depth) in &below {
            assert!(
                depth <= 2,
                "process {pid} at depth {depth}: pressure cascaded"
            );
            // Before exec a child's environ is its copy of the host's memory;
            // what it execs with is what counts.
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
            if exe.is_none() || exe == host_exe {
                continue;
            }
            assert!(
                !environ_has(pid, b"FDWINDOW_PRESSURE="),
                "child {pid} inherited the pressure config"
            );
            assert!(
                !environ_has(pid, b"LD_PRELOAD="),
                "child {pid} inherited LD_PRELOAD"
            );
        }
        max_alive = max_alive.max(below.len());
        samples += 1;
        std::thread::sleep(Duration::from_millis(5)); // sampling, not synchronisation
    }
    let status = host.wait().unwrap();
    assert!(status.success(), "the host failed under pressure: {status}");
    assert!(samples > 0);
    assert!(
        max_alive <= baseline + threads,
        "{max_alive} children alive at once with {threads} threads"
    );
    // The injector stopped and reaped at exit: nothing was orphaned to us.
    let mut orphans = 0;
    while let Ok(Some(_)) = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG) {
        orphans += 1;
    }
    assert_eq!(orphans, 0, "the host left children behind");
    assert_eq!(
        descendants(me).len(),
        baseline,
        "the process count did not return"
    );
    // The injector reports as it goes: the last line is the one at exit.
    let lines = std::fs::read_to_string(&report).unwrap();
    let _ = std::fs::remove_file(&report);
    let last = lines.lines().last().unwrap_or_default();
    let spawns: u64 = last.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(spawns > 0, "no pressure ran in the host: {lines}");
}
