//! The fork-pressure co-tenant's files: the stress comparison and the rate.

use std::fmt::Write as _;

use crate::evidence::pressure_file::PressureFile;
use crate::evidence::query::count_text;
use crate::report::stats::Count;

use super::inputs::{Inputs, no_data};

/// The pressure file the README shows: the Linux one measured last.
pub(super) fn pressure_file(inputs: &Inputs) -> Option<&PressureFile> {
    inputs
        .pressure
        .iter()
        .filter(|p| p.platform.os == "linux")
        .max_by(|a, b| a.measured_at.cmp(&b.measured_at))
}

pub(super) fn pressure_stress(inputs: &Inputs) -> String {
    let Some(p) = pressure_file(inputs) else {
        return no_data("pressure measurements (`make pressure`)");
    };
    let mut cases: Vec<&str> = Vec::new();
    let mut settings: Vec<&str> = Vec::new();
    for c in &p.stress {
        if !cases.contains(&c.case.as_str()) {
            cases.push(&c.case);
        }
        if !settings.contains(&c.pressure.as_str()) {
            settings.push(&c.pressure);
        }
    }
    let alone: Vec<String> = cases
        .iter()
        .map(|case| {
            let (fails, runs) = p
                .stress
                .iter()
                .filter(|c| c.case == *case)
                .fold((0, 0), |(f, r), c| (f + c.alone_failures, r + c.runs));
            format!("{case} {fails}/{runs}")
        })
        .collect();
    let mut out = format!(
        "On `{}`, measured {} by `{}`; every run alone, summed over the settings: {}. \
Each cell: failures under pressure / runs (95% Wilson interval) [median pressured run time between failures].\n\n| pressure |",
        p.platform.id,
        p.measured_at,
        p.command,
        alone.join(", ")
    );
    for case in &cases {
        let _ = write!(out, " {case} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(cases.len()));
    out.push('\n');
    for s in &settings {
        let _ = write!(out, "| `{s}` |");
        for case in &cases {
            let cell = p
                .stress
                .iter()
                .find(|c| c.pressure == *s && c.case == *case)
                .map_or_else(
                    || "—".to_owned(),
                    |c| {
                        let gap = c
                            .median_time_to_failure_s
                            .map_or(String::new(), |t| format!(" [{:.0} ms]", t * 1000.0));
                        format!(
                            "{}{gap}",
                            count_text(Count::new(c.pressure_failures, c.runs))
                        )
                    },
                );
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

pub(super) fn pressure_rate(inputs: &Inputs) -> String {
    let Some(p) = pressure_file(inputs).filter(|p| !p.rate.is_empty()) else {
        return no_data("spawn-rate measurements (`make pressure`)");
    };
    let mut out = format!(
        "On `{}`, measured {}:\n\n| loop | path | threads | spawns/s | spawns per CPU-second |\n|---|---|---|---|---|\n",
        p.platform.id, p.measured_at
    );
    for r in &p.rate {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0} | {:.0} |",
            r.looped, r.path, r.threads, r.spawns_per_s, r.spawns_per_cpu_s
        );
    }
    // The co-tenant's share of a plain loop's children per CPU-second, per
    // path and thread count.
    let shares: Vec<f64> = p
        .rate
        .iter()
        .filter(|r| r.looped == "pressure")
        .filter_map(|r| {
            let plain = p
                .rate
                .iter()
                .find(|q| q.looped == "plain" && q.path == r.path && q.threads == r.threads)?;
            (plain.spawns_per_cpu_s > 0.0).then(|| r.spawns_per_cpu_s / plain.spawns_per_cpu_s)
        })
        .collect();
    if let (Some(lo), Some(hi)) = (
        shares.iter().copied().reduce(f64::min),
        shares.iter().copied().reduce(f64::max),
    ) {
        let _ = writeln!(
            out,
            "\nThe co-tenant got {:.0}–{:.0}% of a plain loop's children per CPU-second here.",
            lo * 100.0,
            hi * 100.0
        );
    }
    out
}
