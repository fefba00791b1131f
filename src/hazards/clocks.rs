//! The clocks a "unique" name might be built from, and what their readings
//! look like: resolution, trailing zero digits, repeated values.
//!
//! Which clocks exist differs per OS (see `src/sys/`); whether this kernel
//! has one is found out at run time from `clock_getres`.

use std::io;
use std::time::Duration;

use nix::time::ClockId;

/// One clock the OS may offer, by its C name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedClock {
    /// The C name, e.g. `CLOCK_REALTIME`.
    pub name: &'static str,
    /// Its id for `clock_gettime`.
    pub id: libc::clockid_t,
}

/// The clocks this OS may offer, CLOCK_REALTIME first.
pub fn os_clocks() -> Vec<NamedClock> {
    fdwindow_fix::sys::CLOCKS
        .iter()
        .map(|&(name, id)| NamedClock { name, id })
        .collect()
}

/// The C clock behind `std::time::Instant` on this OS.
pub fn instant_clock() -> &'static str {
    fdwindow_fix::sys::INSTANT_CLOCK
}

/// `clock_getres(clockid, res)`—Find the resolution (precision) of the
/// specified clock.
///
/// `EINVAL` means this kernel lacks the clock. On macOS the value reported
/// for CLOCK_REALTIME is 1 µs; on Linux it is 1 ns with high-resolution
/// timers and a tick for the coarse clocks.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/clock_getres.2.html>
/// - <https://pubs.opengroup.org/onlinepubs/9699919799/functions/clock_getres.html>
pub fn getres(id: libc::clockid_t) -> io::Result<Duration> {
    Ok(nix::time::clock_getres(ClockId::from_raw(id))?.into())
}

/// `clock_gettime(clockid, tp)`—Retrieve the time of the specified clock, as
/// seconds and the nanosecond field.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/clock_gettime.2.html>
pub fn gettime(id: libc::clockid_t) -> io::Result<(i64, u32)> {
    let ts = nix::time::clock_gettime(ClockId::from_raw(id))?;
    // `allow`, not `expect`: time_t is i32 on some 32-bit targets, where the cast is needed.
    #[allow(
        clippy::unnecessary_cast,
        reason = "time_t is i64 only on 64-bit targets"
    )]
    Ok((ts.tv_sec() as i64, ts.tv_nsec() as u32))
}

/// How many trailing decimal zeros a nanosecond field has (0 to 9; a zero
/// field counts as 9). A clock that ticks in microseconds gives ≥ 3 always.
pub fn trailing_zero_digits(mut nanos: u32) -> u32 {
    if nanos == 0 {
        return 9;
    }
    let mut n = 0;
    while nanos.is_multiple_of(10) {
        nanos /= 10;
        n += 1;
    }
    n
}

/// A nanosecond count truncated to whole microseconds: what a name built from
/// macOS's CLOCK_REALTIME carries. Used on Linux to *simulate* that clock.
pub fn truncate_to_micros(nanos: u128) -> u128 {
    nanos / 1000 * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_zeros() {
        assert_eq!(trailing_zero_digits(0), 9);
        assert_eq!(trailing_zero_digits(1), 0);
        assert_eq!(trailing_zero_digits(120), 1);
        assert_eq!(trailing_zero_digits(123_000), 3);
        assert_eq!(trailing_zero_digits(100_000_000), 8);
        assert_eq!(truncate_to_micros(1_234_567), 1_234_000);
    }

    #[test]
    fn realtime_exists_and_reads() {
        let clocks = os_clocks();
        assert_eq!(clocks[0].name, "CLOCK_REALTIME");
        assert!(getres(clocks[0].id).unwrap() > Duration::ZERO);
        let (secs, nanos) = gettime(clocks[0].id).unwrap();
        assert!(secs > 0 && nanos < 1_000_000_000);
        assert_eq!(
            getres(12345).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }
}
