//! Evidence: the results folder and everything known beside it, and the
//! queries every view asks of them.
//!
//! Takes in the reports the runner merged into `results/` ([`results`]: the
//! files, the merge, the folder lock), the benches' costs ([`costs`]), the
//! fork-pressure and timing measurements ([`pressure_file`], [`timing`]),
//! which of them a read command answers from ([`sources`]: this machine's
//! `results/local` beside the committed files), the claims encoded from
//! measurements ([`knowledge`]) and from cited sources ([`reported`]), the
//! releases each holds for ([`release`]), each
//! file read strictly ([`strict_json`]: no repeated key, nothing a rewrite
//! would drop). Gives out answers, each
//! worded once: the verdict of an arm in a window, its counts as text, one
//! word for an arm over its windows ([`query`]). The
//! [`views`](crate::views) lay those answers out.

pub mod answers;
pub mod audit_bench;
pub mod cited;
pub mod costs;
pub mod knowledge;
pub mod pressure_file;
pub mod query;
pub mod release;
pub mod reported;
pub mod results;
pub mod sources;
pub mod strict_json;
pub mod timing;
