//! Byte classes and the scans over a head: one table with a bit per class,
//! and SWAR (a `u64` word at a time) for the runs a head is mostly made of
//! (targets, field names, values, hosts), with an exact case-blind compare
//! of field names.

/// Whether `b` is of `class` (a bit of the table below).
#[inline]
pub(crate) fn is_of(b: u8, class: u8) -> bool {
    CLASSES[usize::from(b)] & class != 0
}

/// Byte classes for the scans over a head ([`skip`]): one table, a bit
/// per class. RFC 9110 §5.6.2 `tchar`.
pub(crate) const TCHAR: u8 = 1;
/// Visible ASCII (`VCHAR`): a request target's bytes, as the head parser
/// takes them at once.
pub(crate) const VCHAR: u8 = 2;
/// `VCHAR`, space and tab: a field value's bytes (its `obs-text` aside).
pub(crate) const FIELD_TEXT: u8 = 4;
/// A registered name's bytes (RFC 3986 §3.2.2: unreserved and sub-delims,
/// a comma aside): most `Host` values are these alone (`%`, `:`, `[` and
/// `]` are the parser's to judge in context).
pub(crate) const HOST_TEXT: u8 = 8;
/// `0`–`9`: a port's bytes.
pub(crate) const DIGIT: u8 = 16;

static CLASSES: [u8; 256] = {
    let mut table = [0; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let tchar = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
            );
        let vchar = b.is_ascii_graphic();
        let field = vchar || b == b' ' || b == b'\t';
        let host = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b';' | b'='
            );
        table[i] = (tchar as u8 * TCHAR)
            | (vchar as u8 * VCHAR)
            | (field as u8 * FIELD_TEXT)
            | (host as u8 * HOST_TEXT)
            | (b.is_ascii_digit() as u8 * DIGIT);
        i += 1;
    }
    table
};

/// The index of the first byte of `bytes` at or after `from` that is not of
/// `class` (a bit of the table above); `None` when there is none.
///
/// The classes that are a range of bytes with little besides (`VCHAR`,
/// `FIELD_TEXT` and `DIGIT`) are searched eight bytes at a time for the
/// first byte out of their range ([`first_outside`]), which is the answer
/// (but for a tab in a value, from which the table goes on): a target or a
/// value is a few words, not a few dozen table lookups. The others go four bytes per step while four are left (one
/// bounds check and one branch for the four, then the exact place found
/// among them), then a byte at a time.
#[inline(always)]
pub(crate) fn skip(bytes: &[u8], from: usize, class: u8) -> Option<usize> {
    let of = |b: u8| CLASSES[usize::from(b)];
    let mut at = from;
    // `class` is a constant wherever this is inlined: one arm remains.
    let range = match class {
        VCHAR => Some((0x21, 0x7e)),
        FIELD_TEXT => Some((0x20, 0x7e)),
        DIGIT => Some((b'0', b'9')),
        _ => None,
    };
    if let Some((lo, hi)) = range {
        // The rest of `bytes` is taken apart word by word, and the index
        // worked out only at the end: indexing with `at` cost a bounds
        // check of two compares per word.
        let mut rest = bytes.get(from..).unwrap_or_default();
        at = loop {
            let Some((word, after)) = rest.split_first_chunk::<8>() else {
                break bytes.len() - rest.len();
            };
            match first_outside(u64::from_le_bytes(*word), lo, hi) {
                // Outside the range is outside the class: these classes
                // are their ranges (tab aside, which the table then takes).
                Some(i) if class != FIELD_TEXT || word[i] != b'\t' => return Some(bytes.len() - rest.len() + i),
                Some(i) => break bytes.len() - rest.len() + i,
                None => rest = after,
            }
        };
    } else {
        while let Some(&[a, b, c, d]) = bytes.get(at..).and_then(<[u8]>::first_chunk::<4>) {
            if of(a) & of(b) & of(c) & of(d) & class == 0 {
                break;
            }
            at += 4;
        }
    }
    while let Some(&b) = bytes.get(at) {
        if of(b) & class == 0 {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// The index of the first of the eight bytes of `word` (little-endian: its
/// lowest byte first) outside `lo..=hi`, with `lo <= 0x80` and
/// `hi < 0x7f`; `None` when all are inside.
#[inline(always)]
fn first_outside(word: u64, lo: u8, hi: u8) -> Option<usize> {
    match outside(word, lo, hi) {
        0 => None,
        out => Some(out.trailing_zeros() as usize / 8),
    }
}

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
/// Bit 5 of every byte: the one that tells an ASCII letter's cases apart.
const CASE: u64 = u64::from_ne_bytes([0x20; 8]);

/// The top bit of each byte of `word` outside `lo..=hi` (`lo <= 0x80`,
/// `hi < 0x7f`), the other bits clear.
///
/// Each byte's test is done in its own lane, with no carry or borrow
/// crossing into the next (so every lane's answer is exact): with `low`
/// the byte's low seven bits, `0x80 + low - lo` keeps its top bit when
/// `low >= lo`, and `low + 0x7f - hi` sets it when `low > hi`; a byte with
/// its own top bit set is above any `hi`.
#[inline(always)]
fn outside(word: u64, lo: u8, hi: u8) -> u64 {
    debug_assert!(lo <= 0x80 && hi < 0x7f);
    let low = word & !HIGHS;
    let below = !((low | HIGHS) - ONES * u64::from(lo)) & !word & HIGHS;
    let above = ((low + ONES * u64::from(0x7f - hi)) | word) & HIGHS;
    below | above
}

/// The top bit of each byte of `word` that is not an ASCII letter. Setting
/// bit 5 maps `A`–`Z` onto `a`–`z` and nothing else there: a byte that
/// lands in `a`–`z` was one of the two cases of that letter.
#[inline(always)]
fn not_letters(word: u64) -> u64 {
    outside(word | CASE, b'a', b'z')
}

/// The top bit of each byte of `word` other than `b`: a lane is zero after
/// the XOR only where it was `b`, and adding `0x7f` to its low seven bits
/// carries into its top bit (never beyond) when any is set.
#[inline(always)]
fn not_equal(word: u64, b: u8) -> u64 {
    let diff = word ^ (ONES * u64::from(b));
    (((diff & !HIGHS) + !HIGHS) | diff) & HIGHS
}

/// The top bit of each byte of `word` that is not a letter or `-`: what
/// nearly every field name is made of.
#[inline(always)]
fn not_name_letters(word: u64) -> u64 {
    not_letters(word) & not_equal(word, b'-')
}

/// The top bit of each byte of `word` that is not a letter, a digit, `-`
/// or `.`: what nearly every `Host` name or IPv4 address is made of.
#[inline(always)]
fn not_host_letters(word: u64) -> u64 {
    // `-`, `.`, `/` and the digits are one range; `/` is taken out.
    not_letters(word) & (outside(word, b'-', b'9') | !not_equal(word, b'/') & HIGHS)
}

/// From `from`, eight bytes at a time, the index of the first byte that is
/// not a host letter ([`not_host_letters`]) when `HOST`, a name letter
/// ([`not_name_letters`]) when not, or of the first of the last seven or
/// fewer bytes when there is none before them: the caller goes on from
/// there with [`skip`], whose class holds all these letters. (A constant,
/// not a function passed in: LLVM left such a function uninlined.)
#[inline(always)]
fn skip_words<const HOST: bool>(bytes: &[u8], from: usize) -> usize {
    // Word by word from a shrinking slice, as in `skip`.
    let mut rest = bytes.get(from..).unwrap_or_default();
    while let Some((word, after)) = rest.split_first_chunk::<8>() {
        let word = u64::from_le_bytes(*word);
        match if HOST { not_host_letters(word) } else { not_name_letters(word) } {
            0 => rest = after,
            marked => return bytes.len() - rest.len() + marked.trailing_zeros() as usize / 8,
        }
    }
    bytes.len() - rest.len()
}

/// [`skip`] of `TCHAR` for a field name: letters and `-` eight at a time.
#[inline(always)]
pub(crate) fn skip_name(bytes: &[u8], from: usize) -> Option<usize> {
    let at = skip_words::<false>(bytes, from);
    match bytes.get(at) {
        Some(b':') => Some(at),
        _ => skip(bytes, at, TCHAR),
    }
}

/// [`skip`] of `HOST_TEXT` for a `Host` value: letters, digits, `-` and `.`
/// eight at a time.
#[inline(always)]
pub(crate) fn skip_host(bytes: &[u8], from: usize) -> Option<usize> {
    let at = skip_words::<true>(bytes, from);
    match bytes.get(at) {
        Some(b':' | b'\r') => Some(at),
        _ => skip(bytes, at, HOST_TEXT),
    }
}

/// [`skip`] of `DIGIT` for a port, when it is followed by at least eight
/// bytes' worth of the head: one word's test, not a loop. A port of eight
/// digits or more, or one too near the end of `bytes`, is `None`.
#[inline(always)]
pub(crate) fn skip_port(bytes: &[u8], from: usize) -> Option<usize> {
    let word = bytes.get(from..)?.first_chunk::<8>()?;
    Some(from + first_outside(u64::from_le_bytes(*word), b'0', b'9')?)
}

/// Whether `name` is `lower` but for the case of its letters (`lower` has
/// no upper-case ones). Exact for any bytes: bit 5 is set only where
/// `lower` has a letter, and a byte that becomes that letter so was one of
/// its cases; any other byte is compared as it is (`\r` with bit 5 set
/// would pass for `-`). A word compare or two (overlapping when the length
/// is not a multiple of the word's) once inlined with `lower` a constant,
/// where a byte-by-byte compare branched on each byte.
#[inline(always)]
pub(crate) fn is_name<const N: usize>(name: &[u8], lower: &[u8; N]) -> bool {
    let Ok(name) = <&[u8; N]>::try_from(name) else {
        return false;
    };
    // The bytes of the word at `at` that differ, but for case where `lower`
    // has a letter (the top bit of each letter's lane, moved to bit 5).
    fn differ<const W: usize>(name: &[u8], lower: &[u8], at: usize) -> u64 {
        let word = |bytes: &[u8]| {
            let mut word = [0; 8];
            word[..W].copy_from_slice(&bytes[at..at + W]);
            u64::from_le_bytes(word)
        };
        let lower = word(lower);
        (word(name) | (!not_letters(lower) & HIGHS) >> 2) ^ lower
    }
    if N < 4 {
        return name.iter().zip(lower).all(|(&b, &l)| b == l || (l.is_ascii_lowercase() && b | 0x20 == l));
    }
    if N < 8 {
        return differ::<4>(name, lower, 0) | differ::<4>(name, lower, N - 4) == 0;
    }
    let differ = |at| differ::<8>(name, lower, at);
    let mut diff = differ(N - 8);
    let mut at = 0;
    while at + 8 < N {
        diff |= differ(at);
        at += 8;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::{
        CLASSES, DIGIT, FIELD_TEXT, HOST_TEXT, TCHAR, VCHAR, first_outside, is_name, not_host_letters,
        not_name_letters, skip, skip_host, skip_name, skip_port,
    };

    const ALL: [u8; 5] = [TCHAR, VCHAR, FIELD_TEXT, HOST_TEXT, DIGIT];

    /// A xorshift generator: the same bytes on every run.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Each class as the RFCs (and the `Host` check) define it.
    fn defined(class: u8, b: u8) -> bool {
        match class {
            TCHAR => b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b),
            VCHAR => (0x21..=0x7e).contains(&b),
            FIELD_TEXT => (0x21..=0x7e).contains(&b) || b == b' ' || b == b'\t',
            HOST_TEXT => b.is_ascii_alphanumeric() || b"-._~!$&'()*+;=".contains(&b),
            DIGIT => b.is_ascii_digit(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_table_holds_each_class_as_defined() {
        for class in ALL {
            for b in 0..=255u8 {
                assert_eq!(CLASSES[usize::from(b)] & class != 0, defined(class, b), "class {class}, byte {b:#04x}");
            }
        }
    }

    /// `first_outside` is exact in every lane: each byte value in each lane,
    /// the lanes before it inside the range and the lanes after it any
    /// bytes (a carry or borrow out of one lane would show in the next).
    #[test]
    fn first_outside_tells_each_byte_in_each_lane() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for (lo, hi) in [(0x21, 0x7e), (0x20, 0x7e), (b'0', b'9'), (0x80, 0x00), (0x00, 0x7e)] {
            let inside: Vec<u8> = (lo..=hi).collect();
            for b in 0..=255u8 {
                for lane in 0..8 {
                    for _ in 0..4 {
                        let mut bytes = next().to_le_bytes();
                        for before in &mut bytes[..lane] {
                            *before =
                                inside.get(usize::from(*before) % inside.len().max(1)).copied().unwrap_or(*before);
                        }
                        bytes[lane] = b;
                        let expected = bytes.iter().position(|b| !(lo..=hi).contains(b));
                        let got = first_outside(u64::from_le_bytes(bytes), lo, hi);
                        assert_eq!(got, expected, "{bytes:02x?} in {lo:#04x}..={hi:#04x}");
                    }
                }
            }
        }
    }

    /// `skip` finds what a search a byte at a time finds: for every class,
    /// every length up to 40 (the eight- and four-byte steps and the rest),
    /// one byte outside the class at every place or none, from every start.
    #[test]
    fn skip_finds_the_first_byte_outside_the_class() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for class in ALL {
            let inside: Vec<u8> = (0..=255).filter(|&b| defined(class, b)).collect();
            let outside: Vec<u8> = (0..=255).filter(|&b| !defined(class, b)).collect();
            for len in 0..40 {
                for odd_at in 0..=len {
                    let mut bytes: Vec<u8> =
                        (0..len).map(|_| inside[usize::from(next() as u8) % inside.len()]).collect();
                    if odd_at < len {
                        bytes[odd_at] = outside[usize::from(next() as u8) % outside.len()];
                    }
                    for from in 0..=len {
                        let expected = bytes[from..].iter().position(|&b| !defined(class, b)).map(|i| i + from);
                        assert_eq!(skip(&bytes, from, class), expected, "class {class}, {bytes:?} from {from}");
                    }
                }
            }
        }
    }

    /// The word tests behind `skip_name` and `skip_host` are exact in every
    /// lane: each byte value in each lane, among bytes they take.
    #[test]
    fn the_letter_tests_tell_each_byte_in_each_lane() {
        check_lanes(|b| b.is_ascii_alphabetic() || b == b'-', not_name_letters);
        check_lanes(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.', not_host_letters);
    }

    /// `marks` sets the top bit of exactly the lanes whose byte `takes` does
    /// not take.
    fn check_lanes(takes: fn(u8) -> bool, marks: fn(u64) -> u64) {
        let mut next = xorshift(0x5851_f42d_4c95_7f2d);
        let inside: Vec<u8> = (0..=255).filter(|&b| takes(b)).collect();
        for b in 0..=255u8 {
            for lane in 0..8 {
                for _ in 0..4 {
                    let mut bytes = next().to_le_bytes();
                    for other in &mut bytes {
                        *other = inside[usize::from(*other) % inside.len()];
                    }
                    bytes[lane] = b;
                    for (i, &b) in bytes.iter().enumerate() {
                        let marked = marks(u64::from_le_bytes(bytes)) >> (8 * i) & 0xff;
                        assert_eq!(marked, if takes(b) { 0 } else { 0x80 }, "{bytes:02x?}, lane {i}");
                    }
                }
            }
        }
    }

    /// `skip_name`, `skip_host` and `skip_port` find what `skip` finds, from every start,
    /// over bytes mostly of the kind they take eight at a time.
    #[test]
    fn skip_name_skip_host_and_skip_port_are_skip() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let common = b"abcxyzABCXYZ-.0123456789:_~!\r\n \t";
        for _ in 0..20_000 {
            let len = usize::from(next() as u8 % 40);
            let bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 8 {
                    0 => next() as u8,
                    _ => common[next() as usize % common.len()],
                })
                .collect();
            for from in 0..=len {
                assert_eq!(skip_name(&bytes, from), skip(&bytes, from, TCHAR), "{bytes:?} from {from}");
                assert_eq!(skip_host(&bytes, from), skip(&bytes, from, HOST_TEXT), "{bytes:?} from {from}");
                // A port found in one word is where `skip` finds it; it is
                // left only when eight digits or fewer than eight bytes.
                match skip_port(&bytes, from) {
                    Some(at) => assert_eq!(Some(at), skip(&bytes, from, DIGIT), "{bytes:?} from {from}"),
                    None => assert!(
                        len - from < 8 || bytes[from..from + 8].iter().all(u8::is_ascii_digit),
                        "{bytes:?} from {from}"
                    ),
                }
            }
        }
    }

    /// `is_name` is `eq_ignore_ascii_case`: every byte value at every place
    /// of each name it is asked about, in either case, and other lengths.
    #[test]
    fn is_name_ignores_only_the_case_of_letters() {
        fn check<const N: usize>(lower: &[u8; N]) {
            let upper = lower.to_ascii_uppercase();
            for base in [&lower[..], &upper[..]] {
                for at in 0..N {
                    for b in 0..=255u8 {
                        let mut name = base.to_vec();
                        name[at] = b;
                        assert_eq!(is_name(&name, lower), name.eq_ignore_ascii_case(lower), "{name:?}");
                    }
                }
                assert!(!is_name(&base[1..], lower));
                assert!(!is_name(&[base, b"x"].concat(), lower));
            }
        }
        check(b"te");
        check(b"host");
        check(b"close");
        check(b"expect");
        check(b"upgrade");
        check(b"keep-alive");
        check(b"connection");
        check(b"100-continue");
        check(b"content-length");
        check(b"transfer-encoding");
    }
}
