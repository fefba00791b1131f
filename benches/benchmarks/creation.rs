//! Creating a descriptor close-on-exec: two steps (the baseline) versus the
//! atomic flag versus two steps under the spawn lock, per creation call.

use std::time::Duration;

use criterion::{Criterion, criterion_group};
use fdwindow::hazards::cloexec::{Call, Flag, Maker};
use fdwindow::hazards::spawn_lock::SPAWN_LOCK;
use fdwindow_fix::base::scratch::Scratch;

use super::support::Group;

fn create(c: &mut Criterion) {
    let scratch = Scratch::new("bench-creation").expect("scratch folder");
    let mut group = Group::new(c, "cloexec-create", Duration::from_millis(800));
    for call in [Call::Socket, Call::Pipe, Call::Open] {
        let maker = std::rc::Rc::new(Maker::new(call, &scratch.fresh("make")).expect("maker"));
        let m = maker.clone();
        group.bench("two-step", call.id(), move || {
            let maker = &m;
            let made = maker.make(Flag::TwoStep).expect("make");
            made.set_cloexec().expect("set the flag");
        });
        // Linux has every atomic form; elsewhere a missing one is skipped.
        if maker.make(Flag::Atomic).is_ok() {
            let m = maker.clone();
            group.bench("atomic-flag", call.id(), move || {
                m.make(Flag::Atomic).expect("make")
            });
        }
        group.bench("spawn-lock", call.id(), move || {
            let _creating = SPAWN_LOCK.creating();
            let made = maker.make(Flag::TwoStep).expect("make");
            made.set_cloexec().expect("set the flag");
        });
    }
    group.finish();
}

criterion_group!(creation, create);
