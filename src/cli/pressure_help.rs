//! The keys of a pressure spec (`--pressure`), as `--help` shows them: one
//! text that `fdwindow stress` and the audit can both show, held against
//! [`Spec::default`](fdwindow_fix::pressure::Spec) by a test so that a changed
//! default cannot leave the help behind.
//!
//! Only the keys a user sets are listed: `close-hold` and `close-site` are the audit's own
//! diagnosis (stress and audit refuse them) and `controller` is set by the controller.

/// One entry per key: `KEY=VALUE`, what it sets with its unit or values, and
/// `[default: …]` as clap writes a default; a line that starts with spaces
/// continues the entry above. The defaults are
/// [`Config::default`](fdwindow_fix::pressure::Config)'s.
pub const PRESSURE_KEYS: &str = "\
threads=N       spawning threads, 1 to 1024 [default: 4]
hold=DURATION   how long each fork+exec child lives, held between fork and exec:
                0, 500us, 20ms, 1s [default: 1ms]
path=PATH       fork|spawn|mix: fork+exec, posix_spawn, or both in turn [default: mix]
max-alive=N     children alive at once, over all threads, 1 to 1024 [default: 64]
for=DURATION    the threads stop after this long, e.g. 30s [default: 600s]
match=GLOB      start only in a process whose executable's file name matches
                the glob (`*` only) [default: any]
drop=CLASS      none|file|listener|bound|stream|dgram|pipe|all: the descriptors
                each fork+exec child closes before its hold [default: none]";

/// [`PRESSURE_KEYS`] with the defaults of `base` (a spec over which the
/// user's keys apply, as the audit's `threads=8,hold=5ms,path=mix`) and
/// without the keys in `omit` (those a command sets itself).
pub fn keys_over(base: &fdwindow_fix::pressure::Spec, omit: &[&str]) -> String {
    let shown = base.to_string();
    let value = |key: &str| {
        shown
            .split(',')
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
    };
    let mut out = Vec::new();
    let mut key = "";
    for line in PRESSURE_KEYS.lines() {
        // An entry's first line names its key; the lines below continue it.
        if !line.starts_with(' ') {
            key = line.split('=').next().unwrap_or("");
        }
        if omit.contains(&key) {
            continue;
        }
        match (value(key), line.find("[default: ")) {
            (Some(v), Some(at)) => out.push(format!("{}[default: {v}]", &line[..at])),
            _ => out.push(line.to_owned()),
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::{PRESSURE_KEYS, keys_over};
    use fdwindow_fix::pressure::{DropClass, SpawnPath, Spec, parse_duration};

    /// Each entry's key, its text, and its default.
    fn entries(text: &str) -> Vec<(String, String, String)> {
        let mut joined: Vec<String> = Vec::new();
        for line in text.lines() {
            match (line.starts_with(' '), joined.last_mut()) {
                (true, Some(last)) => {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                _ => joined.push(line.to_owned()),
            }
        }
        joined
            .iter()
            .map(|entry| {
                let (key, rest) = entry.split_once('=').expect("KEY=VALUE");
                let (body, default) = rest
                    .strip_suffix(']')
                    .and_then(|r| r.rsplit_once(" [default: "))
                    .unwrap_or_else(|| panic!("{key}: no [default: …]"));
                (key.to_owned(), body.to_owned(), default.to_owned())
            })
            .collect()
    }

    /// The values an entry lists as `a|b|c`.
    fn listed(body: &str) -> Vec<&str> {
        body.split([' ', ':'])
            .find(|w| w.contains('|'))
            .map_or_else(Vec::new, |w| w.split('|').collect())
    }

    /// What in `text` disagrees with the spec parser and
    /// [`Spec::default`]; empty when nothing does.
    fn problems(text: &str) -> Vec<String> {
        let spec = Spec::default();
        let c = &spec.config;
        let mut out = Vec::new();
        let mut check = |ok: bool, what: String| {
            if !ok {
                out.push(what);
            }
        };
        let mut seen = Vec::new();
        for (key, body, default) in entries(text) {
            let says = format!("{key}: the help says {default:?}");
            // Every key a user sets, each named: a new key must be added here.
            match key.as_str() {
                "threads" => check(default.parse() == Ok(c.threads), says),
                "max-alive" => check(default.parse() == Ok(c.max_alive), says),
                "hold" => check(parse_duration(&default) == Ok(c.hold), says),
                "for" => check(parse_duration(&default) == Ok(c.deadline), says),
                "path" => {
                    check(default == c.path.id(), says);
                    let ids = [SpawnPath::ForkExec, SpawnPath::PosixSpawn, SpawnPath::Mix]
                        .map(SpawnPath::id);
                    check(listed(&body) == ids, format!("path lists {body:?}"));
                }
                "match" => check(default == "any" && spec.exe_match.is_none(), says),
                "drop" => {
                    check(default == "none" && c.drop.is_none(), says);
                    let mut ids = vec!["none"];
                    ids.extend(DropClass::ALL.map(DropClass::id));
                    check(listed(&body) == ids, format!("drop lists {body:?}"));
                }
                other => check(false, format!("a key the test does not know: {other}")),
            }
            // The parser takes the key with the value given as its default
            // (`match` has none: any executable is the key's absence).
            if key != "match" {
                let parsed = format!("{key}={default}").parse::<Spec>();
                check(
                    parsed == Ok(Spec::default()),
                    format!("{key}={default} parses to {parsed:?}"),
                );
            }
            seen.push(key);
        }
        // The parser's own list (its error for an unknown key): each key is
        // in the help, or one of those a user does not set.
        let err = "no-such-key=1".parse::<Spec>().unwrap_err().to_string();
        let parsed: Vec<&str> = err
            .split_once("keys: ")
            .map_or("", |(_, keys)| keys)
            .split(", ")
            .filter(|k| !["close-hold", "hold-by", "close-site", "controller"].contains(k))
            .collect();
        check(
            seen == parsed,
            format!("the help's keys {seen:?}, the parser's {parsed:?}"),
        );
        out
    }

    #[test]
    fn every_stated_default_is_the_spec_default() {
        assert_eq!(problems(PRESSURE_KEYS), Vec::<String>::new());
    }

    /// The mutations the check above must catch: a wrong default, a value
    /// list short of one, a key left out.
    #[test]
    fn a_drifted_help_is_caught() {
        for (from, to) in [
            ("[default: 4]", "[default: 8]"),
            ("[default: 1ms]", "[default: 20ms]"),
            ("[default: 600s]", "[default: 60s]"),
            ("[default: mix]", "[default: fork]"),
            ("|dgram|pipe", "|pipe"),
            ("max-alive=N", "maxalive=N"),
        ] {
            let drifted = PRESSURE_KEYS.replace(from, to);
            assert_ne!(drifted, PRESSURE_KEYS, "{from:?} is not in the help");
            assert!(!problems(&drifted).is_empty(), "{from:?} -> {to:?} passed");
        }
        let without_drop = PRESSURE_KEYS.split("\ndrop=").next().unwrap();
        assert!(!problems(without_drop).is_empty(), "a missing key passed");
    }

    /// clap indents an argument's long help by 10 columns and does not wrap
    /// it (no `wrap_help`): each line must fit a 100-column terminal.
    #[test]
    fn every_line_fits_a_terminal() {
        for line in PRESSURE_KEYS.lines() {
            assert!(line.chars().count() <= 90, "{line}");
        }
    }

    #[test]
    fn keys_over_another_spec_show_its_defaults() {
        let base: Spec = "threads=8,hold=5ms,path=mix".parse().unwrap();
        let text = keys_over(&base, &["drop", "match"]);
        assert!(text.contains("[default: 8]"), "{text}");
        assert!(text.contains("[default: 5ms]"), "{text}");
        assert!(!text.contains("[default: 4]"), "{text}");
        assert!(!text.contains("drop="), "{text}");
        assert!(!text.contains("match="), "{text}");
        assert!(text.contains("for=DURATION"), "{text}");
        // Over the default spec, nothing changes.
        assert_eq!(keys_over(&Spec::default(), &[]), PRESSURE_KEYS);
    }
}
