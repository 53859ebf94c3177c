//! The `Date` header value (RFC 9110 §5.6.7, IMF-fixdate), formatted at most
//! once per second per cache.
//!
//! Written here rather than taken from `httpdate` (a dependency of the `fs`
//! feature only): the default build needs no crate for it, and formatting a
//! second costs 17.4 ns here against 27.2 ns through `httpdate`'s `Display`
//! into a stack buffer (`cargo bench --bench encode -- date/format`), once
//! per second per worker either way. A test holds it to `httpdate`'s output
//! over four centuries.

use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate such as `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) const DATE_LEN: usize = 29;

/// A per-thread cache of the formatted current second. Each worker owns one,
/// so there is no sharing and no lock on the hot path.
#[derive(Debug)]
pub(crate) struct DateCache {
    /// The second since the epoch `text` is for.
    secs: u64,
    text: [u8; DATE_LEN],
}

impl DateCache {
    pub(crate) fn new() -> DateCache {
        let mut cache = DateCache { secs: 0, text: format_imf_fixdate(0) };
        cache.now();
        cache
    }

    /// Returns the current time as IMF-fixdate bytes, from the coarse clock
    /// ([`sys::coarse_secs`](crate::sys::coarse_secs): a few milliseconds
    /// behind at most, a tenth of the cost of `SystemTime::now`).
    pub(crate) fn now(&mut self) -> &[u8; DATE_LEN] {
        self.at_secs(crate::sys::coarse_secs())
    }

    /// The second `secs` as IMF-fixdate bytes: formatted when it is not the
    /// one cached (the next, or an earlier one when the clock is set back).
    #[inline]
    fn at_secs(&mut self, secs: u64) -> &[u8; DATE_LEN] {
        if secs != self.secs {
            self.cache(secs);
        }
        &self.text
    }

    #[cold]
    fn cache(&mut self, secs: u64) {
        self.secs = secs;
        self.text = format_imf_fixdate(secs);
    }
}

/// Formats `time` as an HTTP date (IMF-fixdate, RFC 9110 §5.6.7), e.g.
/// `Sun, 06 Nov 1994 08:49:37 GMT`, for `Last-Modified`, `Expires` and the
/// like. Sub-second parts are dropped; times before 1970 give the epoch.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let date = httpool::http_date(UNIX_EPOCH + Duration::from_secs(784_111_777));
/// assert_eq!(date, "Sun, 06 Nov 1994 08:49:37 GMT");
/// ```
pub fn http_date(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    String::from_utf8_lossy(&format_imf_fixdate(secs)).into_owned()
}

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
pub(crate) const MONTHS: [&[u8; 3]; 12] =
    [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];

/// Formats seconds since the Unix epoch as IMF-fixdate.
pub(crate) fn format_imf_fixdate(secs: u64) -> [u8; DATE_LEN] {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
    put2(&mut out[5..7], day);
    out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
    put2(&mut out[12..14], year / 100);
    put2(&mut out[14..16], year % 100);
    put2(&mut out[17..19], rem / 3600);
    put2(&mut out[20..22], rem / 60 % 60);
    put2(&mut out[23..25], rem % 60);
    out
}

fn put2(out: &mut [u8], n: u64) {
    out[0] = b'0' + (n / 10 % 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31) in the proleptic
/// Gregorian calendar (the well-known era-based conversion).
pub(crate) fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats_known_instants() {
        let cases: [(u64, &[u8]); 5] = [
            (0, b"Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, b"Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, b"Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_700_000_000, b"Tue, 14 Nov 2023 22:13:20 GMT"),
            (4_102_444_799, b"Thu, 31 Dec 2099 23:59:59 GMT"),
        ];
        for (secs, want) in cases {
            assert_eq!(&format_imf_fixdate(secs)[..], want, "{secs}");
        }
    }

    /// Every day from 1970 to 2400, each at another second of the day, as
    /// `httpdate` formats it.
    #[test]
    fn formats_every_day_of_four_centuries_as_httpdate_does() {
        for day in 0..(430 * 366) {
            let secs = day * 86_400 + day * 7_919 % 86_400;
            let time = UNIX_EPOCH + Duration::from_secs(secs);
            let theirs = httpdate::fmt_http_date(time);
            assert_eq!(std::str::from_utf8(&format_imf_fixdate(secs)).unwrap(), theirs, "{secs}");
        }
    }

    /// The text follows the clock: the same within a second, the next at
    /// its end, an earlier one when the clock is set back; before 1970, the
    /// epoch.
    #[test]
    fn the_cache_follows_the_clock_both_ways() {
        let at = |secs: u64, millis: u64| UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis);
        let mut cache = DateCache::new();
        let mut cache = |time| *cache.at_secs(crate::sys::secs_since_epoch(time));
        assert_eq!(&cache(at(784_111_777, 0)), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&cache(at(784_111_777, 999)), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&cache(at(784_111_778, 0)), b"Sun, 06 Nov 1994 08:49:38 GMT");
        assert_eq!(&cache(at(784_111_777, 500)), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&cache(at(1_700_000_000, 1)), b"Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(&cache(UNIX_EPOCH - Duration::from_secs(5)), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&cache(at(1_700_000_000, 0)), b"Tue, 14 Nov 2023 22:13:20 GMT");
    }

    #[test]
    fn cache_returns_a_well_formed_date() {
        let mut cache = DateCache::new();
        let text = *cache.now();
        assert_eq!(&text[25..], b" GMT");
        assert_eq!(text[3], b',');
    }
}
