//! The committed results/MATRIX.md (and the spawn-window chart, when the
//! results hold a sweep) is exactly what the committed results and costs give.

use std::path::Path;

#[test]
fn matrix_md_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let files = fdwindow::evidence::results::load_dir(&dir).expect("committed results load");
    assert!(!files.is_empty(), "no results committed");
    let outputs = fdwindow::runner::render_outputs(&dir).expect("committed results load");
    for (name, rendered) in outputs {
        let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            committed == rendered,
            "results/{name} is stale: run `make matrix` (or `make probe-linux`) and commit it"
        );
    }
}
