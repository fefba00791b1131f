//! One module per topic, each ending in `criterion_group!`.

pub mod creation;
pub mod env;
pub mod fix_spawn;
pub mod isolate;
pub mod listeners;
pub mod locks;
pub mod scratch;
pub mod sockets;
pub mod spawn;
pub mod support;
