//! Unit tests of the co-tenant, its settings and their text form.

use std::time::{Duration, Instant};

use super::{config::*, run::*, spec::*};

#[test]
fn durations_are_bounded() {
    assert_eq!(parse_duration("86400s"), Ok(MAX_DURATION));
    let err = parse_duration("18446744073709551615s")
        .unwrap_err()
        .to_string();
    assert!(err.contains("at most a day"), "{err}");
    assert!(parse_duration("99999999999999999999s").is_err());
}

#[test]
fn spec_round_trips_and_rejects_nonsense() {
    let spec: Spec = "threads=2,hold=250us,path=mix,match=demo-*,drop=listener,controller=7@123456"
        .parse()
        .unwrap();
    assert_eq!(spec.config.drop, Some(DropClass::Listener));
    assert_eq!(
        spec.controller,
        Some(ProcessId {
            pid: 7,
            start: 123456
        })
    );
    assert_eq!(spec.config.threads, 2);
    assert_eq!(spec.config.hold, Duration::from_micros(250));
    assert_eq!(spec.config.path, SpawnPath::Mix);
    assert_eq!(spec.to_string().parse::<Spec>().unwrap(), spec);
    assert_eq!("".parse::<Spec>().unwrap(), Spec::default());
    let sited: Spec = "close-hold=file,close-site=1a2b+ff".parse().unwrap();
    assert_eq!(sited.close_sites, [0x1a2b, 0xff]);
    assert_eq!(sited.to_string().parse::<Spec>().unwrap(), sited);
    assert_eq!(sited.hold_by, HoldBy::Pass);
    let forked: Spec = "close-hold=all,hold-by=fork".parse().unwrap();
    assert_eq!(forked.hold_by, HoldBy::Fork);
    assert_eq!(forked.to_string().parse::<Spec>().unwrap(), forked);
    for bad in [
        "threads=0",
        "hold=5",
        "path=vfork",
        "colour=red",
        "threads",
        "drop=sockets",
        "controller=7",
        "controller=0@1",
        "controller=-1@1",
        "controller=7@",
        "controller=7@x",
        "controller=2147483648@1",
        "controller=7@1234567890123456789",
        "ctl=7",
        "close-site=",
        "close-site=0",
        "close-site=zz",
        "close-site=1++2",
        "close-site=1+2+3+4+5+6+7+8+9+a+b+c+d+e+f+10+11",
        "hold-by=clone",
    ] {
        assert!(bad.parse::<Spec>().is_err(), "{bad}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn descriptors_are_classified_in_the_process_itself() {
    use std::os::fd::{AsFd, AsRawFd};
    let _serial = crate::test_serial();
    let file = tempfile::tempfile().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (reader, _writer) = std::io::pipe().unwrap();
    let dir = std::fs::File::open("/").unwrap();
    assert_eq!(DropClass::of(file.as_fd()), Some(DropClass::File));
    assert_eq!(DropClass::of(listener.as_fd()), Some(DropClass::Listener));
    assert_eq!(DropClass::of(stream.as_fd()), Some(DropClass::Stream));
    // A name and nothing more is `bound`: a named datagram socket, a
    // stream socket bound but neither listening nor connected, a Unix
    // abstract name; an unnamed datagram socket is `dgram`, an unbound
    // stream socket `stream`.
    assert_eq!(DropClass::of(udp.as_fd()), Some(DropClass::Bound));
    let tcp = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    assert_eq!(DropClass::of(tcp.as_fd()), Some(DropClass::Stream));
    tcp.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    assert_eq!(DropClass::of(tcp.as_fd()), Some(DropClass::Bound));
    let name = format!("fdwindow-class-{}", std::process::id());
    let addr =
        <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap();
    let named = std::os::unix::net::UnixDatagram::bind_addr(&addr).unwrap();
    assert_eq!(DropClass::of(named.as_fd()), Some(DropClass::Bound));
    let (pair, _other) = std::os::unix::net::UnixDatagram::pair().unwrap();
    assert_eq!(DropClass::of(pair.as_fd()), Some(DropClass::Datagram));
    assert_eq!(DropClass::of(reader.as_fd()), Some(DropClass::Pipe));
    assert_eq!(DropClass::of(dir.as_fd()), None);
    // In a forked child: close the listeners, then list what is left in
    // /proc/self/fd from the exec'd shell (inheritable copies only).
    crate::base::locks::set_cloexec(&file, false).unwrap();
    crate::base::locks::set_cloexec(&listener, false).unwrap();
    // `ls -l` names each descriptor's target: the listener's number may
    // be reused by ls itself once the child closed it.
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", "ls -l /proc/self/fd/"]);
    let drop_listeners = ChildHold::new(Duration::ZERO, Some(DropClass::Listener));
    crate::sys::child_hook::install(&mut cmd, drop_listeners);
    let out = cmd.output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let file_line = format!(" {} -> ", file.as_raw_fd());
    assert!(listing.contains(&file_line), "{listing}");
    assert!(!listing.contains("socket:"), "{listing}");
}

#[test]
fn glob_matches_star_only() {
    assert!(glob_match("demo-*", "demo-0123abcd"));
    assert!(glob_match("demo", "demo"));
    assert!(!glob_match("demo", "demo-1"));
    assert!(glob_match("*test*", "my_tests-9"));
    assert!(!glob_match("a*b*c", "acb"));
    assert!(glob_match("a*a", "aa"));
    assert!(!glob_match("a*a", "a"));
    assert!(!glob_match("rustc", "demo-1"));
}

#[test]
fn guard_spawns_covers_and_reaps() {
    let _serial = crate::test_serial();
    let config = Config {
        threads: 2,
        hold: Duration::from_millis(1),
        path: SpawnPath::Mix,
        ..Config::default()
    };
    let pressure = Pressure::start(config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pressure.stats().spawns < 6 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(pressure.is_running());
    let stats = pressure.stop().unwrap();
    assert!(stats.spawns >= 6, "{stats:?}");
    // Every forked child slept 1 ms inside its window.
    assert!(stats.covered >= Duration::from_millis(1), "{stats:?}");
    assert!(stats.covered <= stats.elapsed, "{stats:?}");
    // Reaped: this process has no child left, exited or running (every
    // unit test that starts children holds the serial guard).
    let r = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG);
    assert!(
        matches!(r, Err(rustix::io::Errno::CHILD)),
        "a child was left: waitpid gave {r:?}"
    );
}

#[test]
fn pressure_stops_by_itself_at_its_deadline() {
    let _serial = crate::test_serial();
    let pressure = Pressure::start(Config {
        threads: 1,
        deadline: Duration::from_millis(50),
        ..Config::default()
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pressure.is_running() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(!pressure.is_running());
    pressure.stop().unwrap();
}

#[test]
fn spawning_threads_block_every_signal() {
    let _serial = crate::test_serial();
    // The mask of this thread is restored after start: the whole set.
    let mask = || crate::sys::thread_sigmask(crate::sys::SigmaskHow::SIG_BLOCK, None).unwrap();
    let before = mask();
    let pressure = Pressure::start(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap();
    let after = mask();
    assert_eq!(before, after);
    // The thread names itself when it starts: wait until it has spawned.
    let deadline = Instant::now() + Duration::from_secs(60);
    while pressure.stats().spawns == 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    #[cfg(target_os = "linux")]
    {
        // /proc/self/task/<tid>/status: the pressure thread's SigBlk.
        let tasks = std::fs::read_dir("/proc/self/task").unwrap();
        let blocked = tasks.filter_map(Result::ok).any(|t| {
            let path = t.path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
            comm.starts_with("fdwindow-pressu")
                && status.lines().any(|l| {
                    l.strip_prefix("SigBlk:").is_some_and(|m| {
                        u64::from_str_radix(m.trim(), 16).unwrap_or(0) & (1 << (libc::SIGCHLD - 1))
                            != 0
                    })
                })
        });
        assert!(blocked, "the pressure thread does not block SIGCHLD");
    }
    pressure.stop().unwrap();
}

#[test]
fn stop_within_returns_stats() {
    let _serial = crate::test_serial();
    let pressure = Pressure::start(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    assert!(pressure.stop_within(Duration::from_secs(30)).is_some());
}
