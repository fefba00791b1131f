//! The workspace benchmark's application crate: a settings file format
//! (`key = value` lines) whose tests are ordinary, and six test binaries
//! (`tests/`) over the helper crate `kit`, five of them with one exposed
//! cause each (labels.json).

use std::collections::BTreeMap;

/// `key = value` lines; `#` starts a comment; later keys win.
pub fn parse_settings(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    mod busy {
        include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
    }

    fn busy(i: usize) {
        kit::busy::mixed(i);
    }

    #[test]
    fn settings_parse() {
        let s = super::parse_settings("a = 1\n# note\nb=2 # two\na = 3\n=x\n");
        assert_eq!(s.get("a").map(String::as_str), Some("3"));
        assert_eq!(s.get("b").map(String::as_str), Some("2"));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn settings_file_round_trip() {
        let dir = kit::ScratchDir::new("settings");
        let path = dir.join("app.conf");
        std::fs::write(&path, "port = 8080\n").unwrap();
        let s = super::parse_settings(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(s.get("port").map(String::as_str), Some("8080"));
    }
}
