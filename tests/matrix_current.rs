//! The committed results/MATRIX.md is exactly what the committed results give.

use std::path::Path;

#[test]
fn matrix_md_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let files = fdwindow::results::load_dir(&dir).expect("committed results load");
    assert!(!files.is_empty(), "no results committed");
    let rendered = fdwindow::matrix::render(&files);
    let committed = std::fs::read_to_string(dir.join("MATRIX.md")).expect("MATRIX.md");
    assert!(
        committed == rendered,
        "results/MATRIX.md is stale: run `make matrix` (or `make probe-linux`) and commit it"
    );
}
