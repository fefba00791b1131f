//! The co-tenant: fork pressure started from threads of a process under
//! test, in-process (`fdwindow_fix::pressure`) or by the preloaded injector
//! ([`preload`]) in any binary.
//!
//! Takes in a [`Spec`](fdwindow_fix::pressure::Spec) (how many threads, which spawn path,
//! which descriptor class each pressure child drops right after fork); gives
//! out bounded, never cascading children that hold the process's
//! descriptors, and a count of what they did. [`preload`] also embeds the
//! parked-call interposer that the harness's `parked-call` window preloads.
//! The `fdwindow stress` and `fdwindow audit` commands that drive it from
//! outside live with the command line (`src/cli/`).

pub mod detect;
pub mod preload;
