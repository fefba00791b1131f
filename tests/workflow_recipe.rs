//! Checks that the README's sharded-audit recipe is `.github/workflows/audit.yml`, byte for
//! byte. The block is the ```` ```yaml ```` fence right after the line
//! `<!-- recipe: .github/workflows/audit.yml -->`; it is compared with the file line by line,
//! and the first line that differs is named. The workflow must stay a sharded audit: run by
//! hand, `fdwindow audit --partition` per shard, joined by `fdwindow audit merge`.

use std::fs;
use std::path::Path;

/// The workflow the README quotes, relative to the crate root.
const WORKFLOW: &str = ".github/workflows/audit.yml";
/// The line right before the README's fence.
const MARKER: &str = "<!-- recipe: .github/workflows/audit.yml -->";
const FIX: &str = "copy .github/workflows/audit.yml, unchanged, into README.md's ```yaml block \
                   after `<!-- recipe: .github/workflows/audit.yml -->`";

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text between the ```` ```yaml ```` line that follows the marker and the next ```` ``` ````
/// line, each of its lines ending in `\n` as a file's do, and the README line it starts on.
fn recipe(readme: &str) -> Result<(usize, &str), String> {
    let mut found = readme.match_indices(MARKER);
    let (at, _) = found
        .next()
        .ok_or_else(|| format!("README.md has no line `{MARKER}`"))?;
    if found.next().is_some() {
        return Err(format!("README.md has `{MARKER}` more than once"));
    }
    let after = &readme[at + MARKER.len()..];
    let body = after
        .strip_prefix("\n```yaml\n")
        .ok_or_else(|| format!("the line after `{MARKER}` in README.md is not ```yaml"))?;
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if line.trim_end_matches('\n') == "```" {
            let first_line = readme[..readme.len() - body.len()].lines().count() + 1;
            return Ok((first_line, &body[..offset]));
        }
        offset += line.len();
    }
    Err(format!(
        "README.md's ```yaml block after `{MARKER}` is never closed"
    ))
}

/// The first line (1-based) at which `a` and `b` differ, with each side's text there (`None`
/// past its end). Lines keep their `\n`, so a missing final newline is a difference too.
fn first_difference<'a>(
    a: &'a str,
    b: &'a str,
) -> Option<(usize, Option<&'a str>, Option<&'a str>)> {
    let (mut a_lines, mut b_lines) = (a.split_inclusive('\n'), b.split_inclusive('\n'));
    for number in 1.. {
        match (a_lines.next(), b_lines.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => return Some((number, x, y)),
        }
    }
    unreachable!("the loop returns at the end of both texts")
}

#[test]
fn readme_recipe_is_the_workflow_file() {
    let readme = read("README.md");
    let workflow = read(WORKFLOW);
    let (first_line, block) = recipe(&readme).unwrap_or_else(|e| panic!("{e}; fix: {FIX}"));
    if let Some((line, in_readme, in_file)) = first_difference(block, &workflow) {
        let show = |l: Option<&str>| {
            l.map_or_else(|| "(ends before this line)".into(), |l| format!("{l:?}"))
        };
        panic!(
            "README.md's recipe differs from {WORKFLOW} at its line {line} (README.md line {}):\n  \
             README.md: {}\n  {WORKFLOW}: {}\nfix: {FIX}",
            first_line + line - 1,
            show(in_readme),
            show(in_file),
        );
    }
}

#[test]
fn the_recipe_is_a_sharded_audit() {
    let workflow = read(WORKFLOW);
    for needle in ["workflow_dispatch", "--partition", "fdwindow audit merge"] {
        assert!(
            workflow.contains(needle),
            "{WORKFLOW} no longer contains `{needle}`: the README's recipe must stay a sharded \
             audit (each shard `fdwindow audit --partition`, joined by `fdwindow audit merge`)"
        );
    }
}

/// The mutations that must break the comparison: a changed byte, a lost final newline, an
/// extra line, and a README whose marker lost its fence.
#[test]
fn a_changed_recipe_is_caught() {
    let workflow = read(WORKFLOW);
    let readme = format!("intro\n\n{MARKER}\n```yaml\n{workflow}```\n\nafter\n");
    assert_eq!(recipe(&readme), Ok((5, workflow.as_str())));
    assert_eq!(
        first_difference(recipe(&readme).unwrap().1, &workflow),
        None
    );

    let changed = workflow.replacen("shard", "shart", 1);
    let line = workflow.lines().position(|l| l.contains("shard")).unwrap() + 1;
    assert_eq!(
        first_difference(&changed, &workflow).map(|d| d.0),
        Some(line)
    );

    let unterminated = workflow.trim_end_matches('\n');
    let last = workflow.lines().count();
    assert_eq!(
        first_difference(unterminated, &workflow).map(|d| d.0),
        Some(last)
    );

    let longer = format!("{workflow}# one more\n");
    assert_eq!(
        first_difference(&longer, &workflow),
        Some((last + 1, Some("# one more\n"), None))
    );

    assert!(recipe("no marker\n").is_err());
    assert!(recipe(&format!("{MARKER}\n\n```yaml\n{workflow}```\n")).is_err());
    assert!(recipe(&format!("{MARKER}\n```yaml\n{workflow}")).is_err());
    assert!(recipe(&format!("{MARKER}\n```yaml\n```\n{MARKER}\n```yaml\n```\n")).is_err());
}
