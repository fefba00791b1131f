//! `--partition`: one shard of a suite's tests, as nextest shards them, so
//! that CI jobs audit a suite together and `fdwindow audit merge` joins
//! their reports.
//!
//! Both schemes work per test binary, on its tests after every filter, in
//! libtest's sorted order: `count:K/N` takes the tests whose index is K-1
//! modulo N, `hash:K/N` those whose name hashes to K-1 modulo N (64-bit
//! xxHash of the name, as nextest hashes it, so a test keeps its shard when
//! others come and go). A bare `K/N` is `count:K/N`.
//!
//! # References
//! - <https://nexte.st/docs/ci-features/partitioning/>
//! - nextest's `nextest-runner/src/partition.rs` (`CountPartitioner`,
//!   `HashPartitioner`)

use fdwindow::error::{Error, Result};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// How tests are dealt to shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// By index within the binary.
    Count,
    /// By a hash of the test's name.
    Hash,
}

/// Shard `shard` of `total` (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    /// How tests are dealt.
    pub scheme: Scheme,
    /// This shard, from 1.
    pub shard: u64,
    /// Shards in all.
    pub total: u64,
}

impl FromStr for Partition {
    type Err = Error;

    fn from_str(s: &str) -> Result<Partition> {
        let (scheme, rest) = match s.split_once(':') {
            Some(("count", rest)) => (Scheme::Count, rest),
            Some(("hash", rest)) => (Scheme::Hash, rest),
            Some((other, _)) => {
                return Err(usage!("{other:?}: the schemes are count: and hash:"));
            }
            None => (Scheme::Count, s),
        };
        let bad = || usage!("{s:?}: expected K/N, count:K/N or hash:K/N with 1 <= K <= N");
        let (k, n) = rest.split_once('/').ok_or_else(bad)?;
        let (shard, total): (u64, u64) =
            (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if shard == 0 || shard > total {
            return Err(bad());
        }
        Ok(Partition {
            scheme,
            shard,
            total,
        })
    }
}

impl Scheme {
    /// Its name in `--partition` (`count`, `hash`).
    pub fn id(self) -> &'static str {
        match self {
            Scheme::Count => "count",
            Scheme::Hash => "hash",
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}/{}", self.scheme.id(), self.shard, self.total)
    }
}

impl Partition {
    /// Whether the test `name`, at `index` among its binary's tests, is in
    /// this shard.
    pub fn selects(&self, name: &str, index: usize) -> bool {
        let slot = match self.scheme {
            Scheme::Count => index as u64,
            Scheme::Hash => name_hash(name),
        };
        slot % self.total == self.shard - 1
    }

    /// The tests of one binary in this shard, in their order. As nextest
    /// does, tests marked `#[ignore]` (in `ignored`) are counted apart from
    /// the others.
    pub fn shard(&self, tests: &[String], ignored: &BTreeSet<String>) -> Vec<String> {
        let (mut plain, mut marked) = (0, 0);
        tests
            .iter()
            .filter(|t| {
                let counter = if ignored.contains(*t) {
                    &mut marked
                } else {
                    &mut plain
                };
                let index = *counter;
                *counter += 1;
                self.selects(t, index)
            })
            .cloned()
            .collect()
    }
}

/// nextest's hash of a test name: 64-bit xxHash of its bytes, seed 0.
fn name_hash(name: &str) -> u64 {
    xxhash_rust::xxh64::xxh64(name.as_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("mod_{i}::test")).collect()
    }

    #[test]
    fn parses_nextest_forms_and_refuses_the_rest() {
        let p: Partition = "hash:2/3".parse().unwrap();
        assert_eq!((p.scheme, p.shard, p.total), (Scheme::Hash, 2, 3));
        assert_eq!("1/2".parse::<Partition>().unwrap().to_string(), "count:1/2");
        for bad in [
            "0/2",
            "3/2",
            "1/0",
            "count:0/1",
            "1",
            "a/b",
            "slice:1/2",
            "1/2/3",
            "",
        ] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
    }

    /// `cargo nextest list --example audit-fixture --partition hash:1/2`
    /// (cargo-nextest 0.9.143) selects exactly these of the fixture's tests.
    #[test]
    fn hashing_deals_as_nextest_does() {
        let shard1 = Partition {
            scheme: Scheme::Hash,
            shard: 1,
            total: 2,
        };
        let fixture = [
            "abstract_name_rebinds",
            "arithmetic_holds",
            "bound_port_rebinds",
            "cargo_environment_is_there",
            "dropped_listener_refuses",
            "file_round_trip",
            "lock_released_by_close",
            "lock_released_by_unlock",
            "picked_port_binds",
            "server_binds_port_zero",
            "sorting_is_stable",
            "text_formats",
            "warm_rewrite_is_fault_free",
        ]
        .map(String::from);
        assert_eq!(
            shard1.shard(&fixture, &BTreeSet::new()),
            [
                "bound_port_rebinds",
                "lock_released_by_unlock",
                "sorting_is_stable",
                "text_formats"
            ]
        );
    }

    #[test]
    fn the_shards_hold_every_test_once() {
        let tests = names(23);
        for scheme in [Scheme::Count, Scheme::Hash] {
            let mut seen: Vec<String> = (1..=4)
                .flat_map(|shard| {
                    Partition {
                        scheme,
                        shard,
                        total: 4,
                    }
                    .shard(&tests, &BTreeSet::new())
                })
                .collect();
            seen.sort();
            let mut all = tests.clone();
            all.sort();
            assert_eq!(seen, all, "{scheme:?}");
        }
        // Counting deals round-robin.
        let first = Partition {
            scheme: Scheme::Count,
            shard: 1,
            total: 4,
        };
        assert_eq!(first.shard(&tests, &BTreeSet::new()).len(), 6);
        // Ignored tests are dealt apart, as `cargo nextest list --run-ignored
        // all --partition count:1/2` deals them: `a` is the first plain test,
        // `b` the first ignored one, `c` the second plain one (shard 2).
        let three = ["a", "b", "c"].map(String::from);
        let ignored: BTreeSet<String> = ["b".to_owned()].into();
        let half = Partition {
            scheme: Scheme::Count,
            shard: 1,
            total: 2,
        };
        assert_eq!(half.shard(&three, &ignored), ["a", "b"]);
    }
}
