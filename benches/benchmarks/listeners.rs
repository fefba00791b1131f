//! Retiring a loopback listener: close alone (the baseline) versus the
//! shutdown variants and draining the accept queue before the close; and
//! ending a connection: drop alone versus `shutdown(Write)` then drop.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Duration;

use criterion::{Criterion, criterion_group};

use super::support::Group;

fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener")
}

/// `shutdown(fd, how)` on a listener; Linux accepts it, other kernels may
/// answer `ENOTCONN`, which the fix then simply pays for.
fn shutdown_listener(l: &TcpListener, how: libc::c_int) {
    let how = match how {
        libc::SHUT_RD => rustix::net::Shutdown::Read,
        libc::SHUT_WR => rustix::net::Shutdown::Write,
        _ => rustix::net::Shutdown::Both,
    };
    let _ = rustix::net::shutdown(l, how);
}

fn listener_retire(c: &mut Criterion) {
    let mut group = Group::new(c, "listener-retire", Duration::from_millis(800));
    let param = "tcp-loopback";
    group.bench_batched("close", param, listener, drop);
    for (imp, how) in [
        ("shutdown-rd", libc::SHUT_RD),
        ("shutdown-rdwr", libc::SHUT_RDWR),
        ("shutdown-wr", libc::SHUT_WR),
    ] {
        group.bench_batched(imp, param, listener, move |l| {
            shutdown_listener(&l, how);
            drop(l)
        });
    }
    // The placeholder never listened: binding it is the whole cost.
    group.bench("bound-unlistened", param, || {
        fdwindow_fix::listener::Placeholder::bind("127.0.0.1:0".parse().expect("address"))
            .expect("bind a placeholder")
    });
    group.bench_batched("drain-then-close", param, listener, |l| {
        l.set_nonblocking(true).expect("nonblocking");
        loop {
            match l.accept() {
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("accept: {e}"),
            }
        }
        drop(l)
    });
    group.finish();
}

fn stream_close(c: &mut Criterion) {
    let server = listener();
    let addr = server.local_addr().expect("address");
    let pair = || {
        let client = TcpStream::connect(addr).expect("connect");
        let (accepted, _) = server.accept().expect("accept");
        (client, accepted)
    };
    let mut group = Group::new(c, "stream-close", Duration::from_millis(800));
    group.bench_batched("drop", "tcp-loopback", pair, |(client, accepted)| {
        drop(client);
        accepted
    });
    group.bench_batched(
        "shutdown-write",
        "tcp-loopback",
        pair,
        |(client, accepted)| {
            client.shutdown(Shutdown::Write).expect("shutdown");
            drop(client);
            accepted
        },
    );
    group.finish();
}

/// Getting a port for a server: pick one (bind port 0, read it, drop) and bind
/// it again later (the baseline), versus letting the server bind port 0, versus
/// picking with a bound-but-unlistened placeholder that the server then listens on.
fn port_pick(c: &mut Criterion) {
    let mut group = Group::new(c, "port-pick", Duration::from_millis(800));
    let param = "tcp-loopback";
    group.bench("pick-then-drop", param, || {
        let port = listener().local_addr().expect("address").port();
        TcpListener::bind(("127.0.0.1", port)).expect("rebind the picked port")
    });
    group.bench("bind-zero-in-server", param, listener);
    group.bench("pick-unlistened", param, || {
        let placeholder =
            fdwindow_fix::listener::Placeholder::bind("127.0.0.1:0".parse().expect("address"))
                .expect("bind a placeholder");
        placeholder.listen(128).expect("listen")
    });
    group.finish();
}

criterion_group!(listeners, listener_retire, stream_close, port_pick);
