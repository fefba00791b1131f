//! The sections by name, and the rewrite of the text between their markers.

use super::audits::{audit_bench, hold_compare, workspace_bench};
use super::inputs::Inputs;
use super::machine::{excerpt, platform, showed, spawn_window, timing, verdict_example};
use super::pressure::{pressure_rate, pressure_stress};
use crate::error::{Result, usage};

/// One generated section: its name in the markers, and its renderer.
pub struct Section {
    /// The `NAME` in `<!-- fdwindow:begin NAME -->`.
    pub name: &'static str,
    /// Renders the section's lines (without the markers).
    pub render: fn(&Inputs) -> String,
}

/// Every section the README may hold.
pub const SECTIONS: &[Section] = &[
    Section {
        name: "platform",
        render: platform,
    },
    Section {
        name: "verdict-example",
        render: verdict_example,
    },
    Section {
        name: "showed",
        render: showed,
    },
    Section {
        name: "spawn-window",
        render: spawn_window,
    },
    Section {
        name: "excerpt",
        render: excerpt,
    },
    Section {
        name: "pressure-stress",
        render: pressure_stress,
    },
    Section {
        name: "pressure-rate",
        render: pressure_rate,
    },
    Section {
        name: "timing",
        render: timing,
    },
    Section {
        name: "audit-bench",
        render: audit_bench,
    },
    Section {
        name: "workspace-bench",
        render: workspace_bench,
    },
    Section {
        name: "hold-compare",
        render: hold_compare,
    },
];

pub(super) const BEGIN: &str = "<!-- fdwindow:begin ";

pub(super) const END: &str = "<!-- fdwindow:end ";

/// Whether `text` holds any generated section.
pub fn has_sections(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with(BEGIN))
}

/// `text` with every section's body rendered anew. Fails on an unknown
/// name, a section without its end, or an end without its beginning.
pub fn rewrite(text: &str, inputs: &Inputs) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<&str> = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim();
        if let Some(name) = marker(trimmed, BEGIN) {
            if let Some(outer) = open {
                return Err(usage!(
                    "line {}: section {name} begins inside section {outer}",
                    n + 1
                ));
            }
            let section = SECTIONS.iter().find(|s| s.name == name).ok_or_else(|| {
                let names: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
                usage!(
                    "line {}: unknown section {name:?}; sections: {}",
                    n + 1,
                    names.join(", ")
                )
            })?;
            out.push_str(line);
            let body = (section.render)(inputs);
            out.push_str(&body);
            if !body.is_empty() && !body.ends_with('\n') {
                out.push('\n');
            }
            open = Some(section.name);
        } else if let Some(name) = marker(trimmed, END) {
            if open != Some(name) {
                return Err(usage!(
                    "line {}: end of section {name} without its beginning",
                    n + 1
                ));
            }
            open = None;
            out.push_str(line);
        } else if open.is_none() {
            out.push_str(line);
        }
    }
    match open {
        Some(name) => Err(usage!("section {name} has no end marker")),
        None => Ok(out),
    }
}

/// The name in `<!-- fdwindow:begin NAME -->` (or `end`), if `line` is one.
pub(super) fn marker<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix)?
        .strip_suffix("-->")
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::readme::inputs::tests::empty;

    #[test]
    fn rewrites_only_inside_sections() {
        let text = "intro 1\n<!-- fdwindow:begin platform -->\nstale 42\n<!-- fdwindow:end platform -->\noutro\n";
        let out = rewrite(text, &empty()).unwrap();
        assert_eq!(
            out,
            "intro 1\n<!-- fdwindow:begin platform -->\n*(no results in the results folder yet)*\n<!-- fdwindow:end platform -->\noutro\n"
        );
        // Rewriting is idempotent, and untouched text stays as it was.
        assert_eq!(rewrite(&out, &empty()).unwrap(), out);
        assert_eq!(rewrite("plain\n", &empty()).unwrap(), "plain\n");
    }

    #[test]
    fn refuses_broken_markers() {
        let err = |t: &str| rewrite(t, &empty()).unwrap_err().to_string();
        assert!(
            err("<!-- fdwindow:begin nope -->\n<!-- fdwindow:end nope -->\n")
                .contains("unknown section")
        );
        assert!(err("<!-- fdwindow:begin platform -->\n").contains("no end marker"));
        assert!(err("<!-- fdwindow:end platform -->\n").contains("without its beginning"));
        assert!(
            err("<!-- fdwindow:begin platform -->\n<!-- fdwindow:begin excerpt -->\n")
                .contains("inside section")
        );
    }

    /// The audit's call-site accuracy, and each test it missed, reach the
    /// benchmark's section.

    #[test]
    fn section_names_are_unique() {
        for (i, s) in SECTIONS.iter().enumerate() {
            assert!(
                SECTIONS[i + 1..].iter().all(|t| t.name != s.name),
                "{}",
                s.name
            );
        }
    }
}
