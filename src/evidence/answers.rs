//! Claims over the answers in probes' tables: what a second bind returns,
//! whether exec of a file open for writing fails, which atomic
//! close-on-exec forms the C library has. An answer is one deterministic
//! fact of the kernel (or its C library) per row, so `fdwindow check` holds
//! each measured answer to its claim as it holds a verdict cell, and the
//! matrix's kernel diff lists the answers that differ between kernels.

use super::cited::{
    AF_UNIX_CONNECT, BIND_MAN, CLOSEFROM_NP, CONNECT_MAN, ETXTBSY_COMMITS, ETXTBSY_GAP,
    EXECVE_ETXTBSY, OPEN_MAN, PIPE_MAN, SOCKET_MAN, SOCKET7_REUSEADDR, UNIX_MAN,
};
use super::release::{Component, Range};
use crate::report::ResultsFile;
use crate::report::platform::Platform;

/// The table columns that hold one deterministic answer of the kernel (or
/// its C library) per row: an errno, a yes or no. Other tables hold counts
/// and times, which differ from run to run on any kernel.
pub const ANSWER_COLUMNS: &[(&str, &str, &[&str])] = &[
    (
        "bind-matrix",
        "second-bind",
        &["second bind: specific", "second bind: wildcard"],
    ),
    (
        "bind-matrix",
        "unix-path-bind",
        &["second bind", "connect to the path"],
    ),
    ("etxtbsy", "exec-while-open", &["exec"]),
    ("two-step-cloexec", "per-call", &["atomic here"]),
    ("two-step-cloexec", "looked-up", &["in this C library"]),
];

/// One answer a results file holds: a cell of one of [`ANSWER_COLUMNS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The probe's hazard id.
    pub hazard: &'a str,
    /// The table's id.
    pub table: &'a str,
    /// The row's key (its first cell).
    pub row: &'a str,
    /// The column's heading.
    pub column: &'a str,
    /// What the cell reads: `ok`, an errno name, `yes`.
    pub answer: &'a str,
}

/// Every answer `file` holds, table by table, row by row.
pub fn answers_of(file: &ResultsFile) -> impl Iterator<Item = Answer<'_>> {
    ANSWER_COLUMNS
        .iter()
        .flat_map(move |&(hazard, id, columns)| {
            let table = file
                .probes
                .get(hazard)
                .and_then(|r| r.tables.iter().find(|t| t.id == id));
            table.into_iter().flat_map(move |table| {
                table.rows.iter().flat_map(move |row| {
                    let key = row.first();
                    table
                        .columns
                        .iter()
                        .zip(row)
                        .skip(1)
                        .filter(|(column, _)| columns.contains(&column.as_str()))
                        .filter_map(move |(column, answer)| {
                            Some(Answer {
                                hazard,
                                table: id,
                                row: key?,
                                column,
                                answer,
                            })
                        })
                })
            })
        })
}

/// The rows an [`AnswerClaim`] speaks of, each with the answers it allows
/// (the first the one expected).
pub type Rows = Vec<(String, &'static [&'static str])>;

/// One encoded claim about a column of a table: the answer of each row.
#[derive(Clone, Copy, Debug)]
pub struct AnswerClaim {
    /// `linux` or `macos`.
    pub os: &'static str,
    /// The probe's hazard id.
    pub hazard: &'static str,
    /// The table's id.
    pub table: &'static str,
    /// Columns of the table's [`ANSWER_COLUMNS`] that answer alike.
    pub columns: &'static [&'static str],
    /// The rows by key, with the answers allowed.
    pub rows: fn() -> Rows,
    /// The releases it holds for; `None` for every release. Where two
    /// claims speak of a row, the one with a range wins.
    pub range: Option<Range>,
    /// Why, in one line.
    pub reason: &'static str,
    /// Where it is documented.
    pub refs: &'static [&'static str],
}

impl AnswerClaim {
    /// The answers it allows in `row`, if it speaks of that row.
    fn allows(&self, row: &str) -> Option<&'static [&'static str]> {
        (self.rows)()
            .into_iter()
            .find(|(key, _)| key == row)
            .map(|(_, answers)| answers)
    }

    /// Whether it holds on `platform`.
    fn holds_on(&self, platform: &Platform) -> bool {
        self.os == platform.os && self.range.is_none_or(|r| r.contains(platform))
    }

    /// `EADDRINUSE or ok [kernel 6.11.0 to 6.12.117] (reason)`; with no
    /// answers (a claim over a whole table), the range and reason alone.
    pub fn text(&self, answers: &[&str]) -> String {
        let words = (!answers.is_empty()).then(|| answers.join(" or "));
        let range = self.range.map(|r| format!("[{r}]"));
        let reason = Some(format!("({})", self.reason));
        [words, range, reason]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

const EADDRINUSE: &[&str] = &["EADDRINUSE"];
const OK: &[&str] = &["ok"];
const YES: &[&str] = &["yes"];

/// Linux's second bind of an address in use, by `family/first/state/options`
/// (bind-matrix's key): refused unless both sockets set `SO_REUSEPORT`, or
/// both set `SO_REUSEADDR` and the first is not listening. The specific
/// address and the wildcard conflict alike, in every family.
fn linux_second_bind() -> Rows {
    let mut rows = Vec::new();
    for family in ["v4", "v6", "dual"] {
        for first in ["specific", "wildcard"] {
            for state in ["bound", "listening"] {
                for options in ["none", "reuseaddr", "reuseport"] {
                    let shared =
                        options == "reuseport" || (options == "reuseaddr" && state == "bound");
                    let answer = if shared { OK } else { EADDRINUSE };
                    rows.push((format!("{family}/{first}/{state}/{options}"), answer));
                }
            }
        }
    }
    rows
}

fn rows(pairs: &[(&str, &'static [&'static str])]) -> Rows {
    pairs.iter().map(|&(k, a)| (k.to_owned(), a)).collect()
}

const LINUX_ANSWERS: &[AnswerClaim] = &[
    AnswerClaim {
        os: "linux",
        hazard: "bind-matrix",
        table: "second-bind",
        columns: &["second bind: specific", "second bind: wildcard"],
        rows: linux_second_bind,
        range: None,
        reason: "a second bind of an address in use succeeds only when both sockets set SO_REUSEPORT, or both set SO_REUSEADDR and the first is not listening; specific and wildcard addresses conflict alike, and a dual-stack IPv6 socket conflicts with IPv4",
        refs: &[BIND_MAN, SOCKET7_REUSEADDR],
    },
    AnswerClaim {
        os: "linux",
        hazard: "bind-matrix",
        table: "unix-path-bind",
        columns: &["second bind"],
        rows: || {
            rows(&[
                ("path in use (listening)", EADDRINUSE),
                ("path in use (bound, not listening)", EADDRINUSE),
                ("stale path after close", EADDRINUSE),
                ("unlink before bind", OK),
                ("unlinked while the first listens", OK),
            ])
        },
        range: None,
        reason: "a path a socket was bound to stays a file until unlinked, whether or not the socket lives, so binding it again fails until it is removed",
        refs: &[UNIX_MAN],
    },
    AnswerClaim {
        os: "linux",
        hazard: "bind-matrix",
        table: "unix-path-bind",
        columns: &["connect to the path"],
        rows: || {
            rows(&[
                ("path in use (listening)", &["connected"]),
                ("path in use (bound, not listening)", &["ECONNREFUSED"]),
                ("stale path after close", &["ECONNREFUSED"]),
                ("unlink before bind", &["connected"]),
                ("unlinked while the first listens", &["connected"]),
            ])
        },
        range: None,
        reason: "a connect reaches the socket now bound at the path, and is refused where none listens there",
        refs: &[UNIX_MAN, CONNECT_MAN, AF_UNIX_CONNECT],
    },
    AnswerClaim {
        os: "linux",
        hazard: "etxtbsy",
        table: "exec-while-open",
        columns: &["exec"],
        rows: || {
            rows(&[
                ("write descriptor open", &["ETXTBSY"]),
                ("write descriptor closed", &["runs"]),
            ])
        },
        range: None,
        reason: "exec refuses a file open for writing, and runs it once the last writer is closed",
        refs: &[EXECVE_ETXTBSY, ETXTBSY_COMMITS],
    },
    AnswerClaim {
        os: "linux",
        hazard: "etxtbsy",
        table: "exec-while-open",
        columns: &["exec"],
        rows: || rows(&[("write descriptor open", &["runs", "ETXTBSY"])]),
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
    },
    AnswerClaim {
        os: "linux",
        hazard: "two-step-cloexec",
        table: "per-call",
        columns: &["atomic here"],
        rows: || {
            rows(&[
                ("socket", YES),
                ("socketpair", YES),
                ("accept", YES),
                ("pipe", YES),
                ("dup", YES),
                ("open", YES),
                ("connect", YES),
            ])
        },
        range: None,
        reason: "every call that makes a descriptor has a form that sets close-on-exec as it makes it (SOCK_CLOEXEC, accept4, pipe2, F_DUPFD_CLOEXEC, O_CLOEXEC)",
        refs: &[SOCKET_MAN, PIPE_MAN, OPEN_MAN],
    },
    AnswerClaim {
        os: "linux",
        hazard: "two-step-cloexec",
        table: "looked-up",
        columns: &["in this C library"],
        rows: || rows(&[("pipe2", YES), ("accept4", YES), ("dup3", YES)]),
        range: None,
        reason: "glibc has pipe2 and dup3 from 2.9 and accept4 from 2.10; musl has all three",
        refs: &[PIPE_MAN, SOCKET_MAN],
    },
    AnswerClaim {
        os: "linux",
        hazard: "two-step-cloexec",
        table: "looked-up",
        columns: &["in this C library"],
        rows: || rows(&[("posix_spawn_file_actions_addclosefrom_np", YES)]),
        range: Some(Range {
            of: Component::Libc,
            since: Some((2, 34, 0)),
            until: None,
        }),
        reason: "glibc added posix_spawn_file_actions_addclosefrom_np in 2.34",
        refs: &[CLOSEFROM_NP],
    },
];

/// Every answer claim.
pub fn answer_claims() -> impl Iterator<Item = &'static AnswerClaim> {
    LINUX_ANSWERS.iter()
}

/// The claim about one answer on `platform`, with the answers it allows: of
/// those that hold there and speak of the row, one with a release range
/// wins over one without.
pub fn answer_claim_on(
    platform: &Platform,
    hazard: &str,
    table: &str,
    column: &str,
    row: &str,
) -> Option<(&'static AnswerClaim, &'static [&'static str])> {
    answer_claims()
        .filter(|c| c.hazard == hazard && c.table == table && c.columns.contains(&column))
        .filter(|c| c.holds_on(platform))
        .filter_map(|c| Some((c, c.allows(row)?)))
        .min_by_key(|(c, _)| c.range.is_none())
}

/// What the check over answers says of one answer, or of a claim whose
/// table, column or row is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerFinding {
    /// The answer is one its claim allows.
    Agrees,
    /// Another answer than its claim allows.
    Contradiction,
    /// The claim's table, column or row is missing from a probe that ran.
    WithoutEvidence,
    /// The claim's table could not be observed (`unsupported: …`, `broken: …`).
    NotObserved,
    /// An answer no claim speaks of.
    WithoutClaim,
    /// The claim's probe did not run.
    NotMeasured,
}

/// One line of the check over answers: its finding, the cell `hazard
/// table "row" column`, the claim, the evidence.
pub type AnswerCheck = (AnswerFinding, String, String, String);

/// Holds every answer claim that holds on `file`'s platform against its
/// tables, and every answer the file holds against the claim that speaks of it.
pub fn check_answers(file: &ResultsFile) -> Vec<AnswerCheck> {
    let platform = &file.platform;
    let mut out = Vec::new();
    let cell = |hazard: &str, table: &str, row: &str, column: &str| {
        format!("{hazard} {table} \"{row}\" {column}")
    };
    for claim in answer_claims().filter(|c| c.holds_on(platform)) {
        // A whole table, or a column of it, speaks for no one answer; a row
        // names the answers the claim allows there.
        let mut missing = |finding, cell, answers: &[&str], why: &str| {
            out.push((finding, cell, claim.text(answers), why.to_owned()));
        };
        let whole = |column| cell(claim.hazard, claim.table, "*", column);
        let columns = claim.columns.join(", ");
        let Some(report) = file.probes.get(claim.hazard) else {
            missing(
                AnswerFinding::NotMeasured,
                whole(&columns),
                &[],
                "probe not run",
            );
            continue;
        };
        let Some(table) = report.tables.iter().find(|t| t.id == claim.table) else {
            let why = "nothing: the table is missing from the report";
            missing(AnswerFinding::WithoutEvidence, whole(&columns), &[], why);
            continue;
        };
        if let Some(problem) = &table.problem {
            missing(AnswerFinding::NotObserved, whole(&columns), &[], problem);
            continue;
        }
        for &column in claim.columns {
            let Some(i) = table.columns.iter().position(|c| c == column) else {
                let why = "nothing: the column is missing from the table";
                missing(AnswerFinding::WithoutEvidence, whole(column), &[], why);
                continue;
            };
            for (row, allowed) in (claim.rows)() {
                let answered = |r: &Vec<String>| r.first() == Some(&row) && r.get(i).is_some();
                if !table.rows.iter().any(answered) {
                    let here = cell(claim.hazard, claim.table, &row, column);
                    let why = "nothing: the row is missing from the table";
                    missing(AnswerFinding::WithoutEvidence, here, allowed, why);
                }
            }
        }
    }
    for a in answers_of(file) {
        let here = cell(a.hazard, a.table, a.row, a.column);
        let answer = a.answer.to_owned();
        out.push(
            match answer_claim_on(platform, a.hazard, a.table, a.column, a.row) {
                None => (AnswerFinding::WithoutClaim, here, "nothing".into(), answer),
                Some((claim, allowed)) => {
                    let finding = if allowed.contains(&a.answer) {
                        AnswerFinding::Agrees
                    } else {
                        AnswerFinding::Contradiction
                    };
                    (finding, here, claim.text(allowed), answer)
                }
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_bind_rows_are_the_probes_keys() {
        let rows = linux_second_bind();
        assert_eq!(rows.len(), 36);
        let find = |k: &str| rows.iter().find(|(r, _)| r == k).unwrap().1;
        assert_eq!(find("v4/specific/bound/reuseaddr"), OK);
        assert_eq!(find("v6/wildcard/listening/reuseaddr"), EADDRINUSE);
        assert_eq!(find("dual/specific/listening/reuseport"), OK);
        assert_eq!(find("dual/wildcard/bound/none"), EADDRINUSE);
    }

    #[test]
    fn a_claim_with_a_range_wins_inside_it() {
        let mut platform = Platform::detect();
        platform.os = "linux".into();
        platform.kernel_release = "6.11.2".into();
        let row = "write descriptor open";
        let (_, allowed) =
            answer_claim_on(&platform, "etxtbsy", "exec-while-open", "exec", row).unwrap();
        assert_eq!(allowed, &["runs", "ETXTBSY"]);
        platform.kernel_release = "6.13.0".into();
        let (_, allowed) =
            answer_claim_on(&platform, "etxtbsy", "exec-while-open", "exec", row).unwrap();
        assert_eq!(allowed, &["ETXTBSY"]);
    }
}
