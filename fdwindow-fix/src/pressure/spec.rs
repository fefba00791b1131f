//! The text form of the co-tenant's settings (`FDWINDOW_PRESSURE`), the
//! process that controls it, and the durations and patterns it reads.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::config::*;

/// One process, named so that a reused pid is not taken for it: its pid and
/// its start time as the kernel reports it (Linux: `/proc/PID/stat`'s
/// `starttime`; macOS: `proc_pidinfo`'s `pbi_start`), as `PID@START`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessId {
    /// Its pid.
    pub pid: u32,
    /// Its start time, in the kernel's unit.
    pub start: u64,
}

impl ProcessId {
    /// This process.
    pub fn this_process() -> std::io::Result<ProcessId> {
        let pid = std::process::id();
        Ok(ProcessId {
            pid,
            start: crate::sys::start_time_of(pid)?,
        })
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.pid, self.start)
    }
}

impl std::str::FromStr for ProcessId {
    type Err = SpecError;

    /// `PID@START`, as the injector reads it: a pid of 1 to 2^31-1 and a
    /// start time of at most 18 digits.
    fn from_str(text: &str) -> Result<ProcessId, SpecError> {
        let bad = || bad_spec!("controller={text}: expected PID@START");
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
        let (pid, start) = text.split_once('@').ok_or_else(bad)?;
        if !digits(pid) || !digits(start) {
            return Err(bad());
        }
        let pid: u32 = pid
            .parse()
            .ok()
            .filter(|p| (1..=i32::MAX as u32).contains(p))
            .ok_or_else(bad)?;
        Ok(ProcessId {
            pid,
            start: start.parse().map_err(|_| bad())?,
        })
    }
}

/// A pressure configuration as text, for the injector's [`ENV_VAR`] and
/// `fdwindow stress --pressure`: comma-separated `key=value` pairs, any
/// subset, e.g. `threads=4,hold=20ms,path=fork`.
///
/// | key | value | default |
/// |---|---|---|
/// | `threads` | spawning threads | 4 |
/// | `hold` | `0`, `500us`, `20ms`, `1s` | `1ms` |
/// | `path` | `fork`, `spawn` (posix_spawn) or `mix` | `mix` |
/// | `max-alive` | children alive at once | 64 |
/// | `for` | the threads stop after this long | `600s` |
/// | `match` | start only in a process whose executable's file name matches this glob (`*` only) | any |
/// | `drop` | fork+exec children close this [`DropClass`] right after the fork: `file`, `listener`, `bound`, `stream`, `dgram`, `pipe`, `all` | `none` |
/// | `close-hold` | the injector only: no spawning threads; each close of a descriptor of this [`DropClass`] is first held by a child for `hold` ([`Spec::close_hold`]) | `none` |
/// | `hold-by` | the injector only, with `close-hold`: `pass` sends each copy to one holder process over a Unix socket, `fork` forks a child per copy ([`HoldBy`]) | `pass` |
/// | `close-site` | the injector only, with `close-hold`: hold only the closes whose stack passes through one of these addresses of the executable, hexadecimal, joined by `+` (at most 16; the addresses the injector's `site` report lines give) ([`Spec::close_sites`]) | every close |
/// | `controller` | `PID@START`, the controller's process ([`ProcessId`]): the injector stops when it ends, and starts nothing once it has | none |
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Spec {
    /// The pressure to start.
    pub config: Config,
    /// Start only in processes whose executable name matches (the injector
    /// checks; a build driver such as cargo and its compilers stay unpressured).
    pub exe_match: Option<String>,
    /// The controller (`fdwindow stress`, `fdwindow audit`), `controller=PID@START`:
    /// the injector watches that process (no descriptor is passed down) and
    /// stops its threads within one hold once it ends, killed included.
    /// Only the injector reads it; [`Pressure`](super::Pressure) ignores it.
    pub controller: Option<ProcessId>,
    /// `close-hold=CLASS`: the injector's deterministic mode. It starts no
    /// spawning threads; instead, before the process closes a descriptor of
    /// this class, a copy of it is kept alive for [`Config::hold`], as
    /// [`Spec::hold_by`] says. Only the injector can do this (it interposes
    /// `close`); [`Pressure`](super::Pressure) ignores it.
    pub close_hold: Option<DropClass>,
    /// `hold-by=`: how [`Spec::close_hold`] keeps its copies.
    pub hold_by: HoldBy,
    /// `close-site=HEX+HEX…`: with [`Spec::close_hold`], only the closes
    /// whose call stack passes through one of these addresses of the
    /// executable (in its own address space, as the injector reports
    /// stacks) are held: the call sites of one line. Empty: every close.
    pub close_sites: Vec<u64>,
}

/// How the injector's `close-hold=` keeps a copy of each closed descriptor.
///
/// Both copies are the same open file description as the host's (a lock, a
/// listener, a bound name, a pipe's write end live on in either); they
/// differ in what else comes with them and what they cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HoldBy {
    /// Sent over a Unix socket (`SCM_RIGHTS`) to one holder process the
    /// injector starts: microseconds a close, and every close held but
    /// where the system bounds it (each such close counted by reason). Its
    /// sham sends the same message without the descriptor.
    #[default]
    Pass,
    /// A fork of the process per copy, keeping only that descriptor: what
    /// a real spawn does, at the cost of a fork (bounded by `max-alive` and
    /// half of each second spent forking). Its sham's children drop it.
    Fork,
}

impl HoldBy {
    /// Both ways.
    pub const ALL: [HoldBy; 2] = [HoldBy::Pass, HoldBy::Fork];

    /// The way [`HoldBy::id`] names `id`, if any.
    pub fn from_id(id: &str) -> Option<HoldBy> {
        HoldBy::ALL.into_iter().find(|h| h.id() == id)
    }

    /// The id in [`Spec`] strings.
    pub fn id(self) -> &'static str {
        match self {
            HoldBy::Pass => "pass",
            HoldBy::Fork => "fork",
        }
    }
}

/// Addresses `close-site=` takes at most (the injector's table).
pub const MAX_CLOSE_SITES: usize = 16;

impl Spec {
    /// Whether the pressure applies to an executable named `exe_name`.
    pub fn applies_to(&self, exe_name: &str) -> bool {
        self.exe_match
            .as_deref()
            .is_none_or(|pattern| glob_match(pattern, exe_name))
    }
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Spec, SpecError> {
        let mut spec = Spec::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad_spec!("{pair:?} is not key=value"))?;
            let count = |v: &str| match v.parse::<usize>() {
                Ok(n) if (1..=1024).contains(&n) => Ok(n),
                _ => Err(bad_spec!("{key}={v}: expected a number from 1 to 1024")),
            };
            let c = &mut spec.config;
            match key {
                "threads" => c.threads = count(value)?,
                "max-alive" => c.max_alive = count(value)?,
                "hold" => c.hold = parse_duration(value)?,
                "for" => c.deadline = parse_duration(value)?,
                "path" => {
                    c.path = match value {
                        "fork" | "fork-exec" => SpawnPath::ForkExec,
                        "spawn" | "posix-spawn" => SpawnPath::PosixSpawn,
                        "mix" => SpawnPath::Mix,
                        _ => return Err(bad_spec!("path={value}: expected fork, spawn or mix")),
                    }
                }
                "match" if !value.is_empty() => spec.exe_match = Some(value.to_owned()),
                "controller" => spec.controller = Some(value.parse()?),
                "hold-by" => {
                    spec.hold_by = HoldBy::from_id(value)
                        .ok_or_else(|| bad_spec!("hold-by={value}: expected pass or fork"))?;
                }
                "close-site" => {
                    let bad = || {
                        bad_spec!("close-site={value}: expected hexadecimal addresses joined by +")
                    };
                    spec.close_sites = value
                        .split('+')
                        .map(|a| match u64::from_str_radix(a, 16) {
                            Ok(n) if n > 0 => Ok(n),
                            _ => Err(bad()),
                        })
                        .collect::<Result<_, _>>()?;
                    if spec.close_sites.len() > MAX_CLOSE_SITES {
                        return Err(bad_spec!(
                            "close-site={value}: at most {MAX_CLOSE_SITES} addresses"
                        ));
                    }
                }
                "drop" | "close-hold" => {
                    let class = match value {
                        "none" => None,
                        _ => Some(DropClass::from_id(value).ok_or_else(|| {
                            bad_spec!(
                                "{key}={value}: expected none, file, listener, bound, stream, dgram, pipe or all"
                            )
                        })?),
                    };
                    if key == "drop" {
                        c.drop = class;
                    } else {
                        spec.close_hold = class;
                    }
                }
                _ => {
                    return Err(bad_spec!(
                        "unknown key {key:?}; keys: threads, hold, path, max-alive, for, match, drop, close-hold, hold-by, close-site, controller"
                    ));
                }
            }
        }
        if spec.config.hold >= spec.config.deadline {
            return Err(bad_spec!("hold must be shorter than for"));
        }
        Ok(spec)
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "threads={},hold={},path={},max-alive={},for={}",
            c.threads,
            duration_text(c.hold),
            c.path.id(),
            c.max_alive,
            duration_text(c.deadline)
        )?;
        if let Some(d) = c.drop {
            write!(f, ",drop={}", d.id())?;
        }
        if let Some(d) = self.close_hold {
            write!(f, ",close-hold={}", d.id())?;
        }
        if self.hold_by != HoldBy::default() {
            write!(f, ",hold-by={}", self.hold_by.id())?;
        }
        if !self.close_sites.is_empty() {
            let sites: Vec<String> = self.close_sites.iter().map(|a| format!("{a:x}")).collect();
            write!(f, ",close-site={}", sites.join("+"))?;
        }
        if let Some(c) = self.controller {
            write!(f, ",controller={c}")?;
        }
        if let Some(m) = &self.exe_match {
            write!(f, ",match={m}")?;
        }
        Ok(())
    }
}

/// A pressure spec, a duration or a controller id that does not parse: what
/// was given, and what was expected instead, in one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// A [`SpecError`] with a `format!` message.
macro_rules! bad_spec {
    ($($arg:tt)*) => {
        SpecError(format!($($arg)*))
    };
}
use bad_spec;

/// `0`, `250us`, `20ms`, `2s`.
pub fn parse_duration(text: &str) -> Result<Duration, SpecError> {
    let bad = || bad_spec!("{text:?}: expected a duration such as 0, 500us, 20ms or 2s");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let n: u64 = text[..split].parse().map_err(|_| bad())?;
    let d = match &text[split..] {
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return Err(bad()),
    };
    // Deadlines are `Instant + duration`: keep them far from overflow. A day
    // is longer than any pressured run needs.
    if d > MAX_DURATION {
        return Err(bad_spec!("{text:?}: at most a day (86400s)"));
    }
    Ok(d)
}

/// The longest hold or run time [`parse_duration`] accepts.
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// The shortest exact text [`parse_duration`] reads back.
pub(super) fn duration_text(d: Duration) -> String {
    let us = d.as_micros();
    if us == 0 {
        "0".into()
    } else if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1_000) {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// A glob with `*` (any run of characters) and nothing else.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*`: an exact match
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}
