//! The README's generated sections: every measured figure in the README sits
//! between `<!-- fdwindow:begin NAME -->` and `<!-- fdwindow:end NAME -->`,
//! and `fdwindow matrix` rewrites what lies between from the results folder
//! (`fdwindow matrix --check` fails when a section differs). Prose outside
//! the sections states no measured number.
//!
//! Adding a section: write a `fn(&Inputs) -> String` and list it in
//! [`SECTIONS`] under its name, then put the two marker lines in README.md.

mod audits;
mod inputs;
mod machine;
mod pressure;
mod sections;

pub use inputs::Inputs;
pub use sections::{SECTIONS, Section, has_sections, rewrite};
