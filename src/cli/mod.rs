//! The `fdwindow` command's own subcommands that run a user's program under
//! the co-tenant (this folder belongs to the binary, not the library).
//!
//! Take in a command or a test suite; give out a comparison, alone and under
//! fork pressure, as text and JSON: `fdwindow stress` ([`stress`]) runs one
//! command both ways, `fdwindow audit` ([`audit`]) runs a whole libtest suite
//! both ways and diagnoses each test that fails more under pressure.

/// [`Error::Usage`](fdwindow::error::Error::Usage) with a `format!`
/// message, as the library's own `usage!` makes it: the commands here end on
/// bad input (exit 2). Defined before the modules, so in scope in each.
macro_rules! usage {
    ($($arg:tt)*) => {
        fdwindow::error::Error::Usage(format!($($arg)*))
    };
}

pub mod audit;
pub mod discover;
pub mod libtest;
pub mod partition;
pub mod pressure_help;
pub mod stress;
