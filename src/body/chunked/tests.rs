use super::*;

/// Decodes `wire` fed in pieces of `step` bytes; returns the body or the error.
fn decode(wire: &[u8], step: usize) -> Result<Vec<u8>, BodyError> {
    decode_within(wire, step, u64::MAX)
}

/// [`decode`] for a body of at most `max` bytes.
fn decode_within(wire: &[u8], step: usize, max: u64) -> Result<Vec<u8>, BodyError> {
    let mut decoder = ChunkedDecoder::new(max);
    let mut body = Vec::new();
    let mut out = [0u8; 7];
    for piece in wire.chunks(step) {
        let mut at = 0;
        while at < piece.len() && !decoder.is_done() {
            let (used, produced) = decoder.decode(&piece[at..], &mut out)?;
            body.extend_from_slice(&out[..produced]);
            at += used;
            if used == 0 && produced == 0 {
                break;
            }
        }
    }
    if decoder.is_done() { Ok(body) } else { Err(BodyError::Io) }
}

fn decodes(wire: &[u8], want: &[u8]) {
    for step in [1, 2, 3, wire.len()] {
        assert_eq!(decode(wire, step).as_deref(), Ok(want), "step {step}: {:?}", String::from_utf8_lossy(wire));
    }
}

fn refuses(wire: &[u8]) {
    for step in [1, wire.len()] {
        assert_eq!(decode(wire, step), Err(BodyError::Malformed), "step {step}: {:?}", String::from_utf8_lossy(wire));
    }
}

/// Feeds `start`, then `byte` one at a time until the decoder stops taking
/// it (or 1 MiB of them): what it answered then, and how many it took.
fn endless(start: &[u8], byte: u8) -> (Result<(usize, usize), BodyError>, usize) {
    let mut decoder = ChunkedDecoder::new(u64::MAX);
    assert_eq!(decoder.decode(start, &mut [0; 8]), Ok((start.len(), 0)));
    let mut used = 0;
    let error = loop {
        match decoder.decode(&[byte], &mut [0; 8]) {
            Ok((1, 0)) if used < 1 << 20 => used += 1,
            other => break other,
        }
    };
    (error, used)
}

#[test]
fn decodes_plain_chunks() {
    decodes(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world");
    decodes(b"0\r\n\r\n", b"");
    decodes(b"A\r\n0123456789\r\n0\r\n\r\n", b"0123456789");
    decodes(b"000a\r\n0123456789\r\n0\r\n\r\n", b"0123456789");
}

#[test]
fn tolerates_extensions_and_trailers() {
    decodes(b"5;name=value\r\nhello\r\n0;last\r\n\r\n", b"hello");
    decodes(b"5 ;a=\"q\"\r\nhello\r\n0\r\n\r\n", b"hello");
    decodes(b"5; a = b ; c=\"x\\\"y;z\"\r\nhello\r\n0\r\n\r\n", b"hello");
    decodes(b"5\r\nhello\r\n0\r\nExpires: never\r\nX: y\r\n\r\n", b"hello");
}

/// RFC 9112 §7.1.2: the trailer section is field lines, `field-name ":"
/// OWS field-value OWS`.
#[test]
fn accepts_trailer_field_lines() {
    decodes(b"0\r\nFoo: bar\r\n\r\n", b"");
    decodes(b"5\r\nhello\r\n0\r\nFoo: bar\r\n\r\n", b"hello");
    // Empty values, with or without whitespace.
    decodes(b"0\r\nFoo:\r\n\r\n", b"");
    decodes(b"0\r\nFoo: \t \r\n\r\n", b"");
    // No whitespace, whitespace inside and around, obs-text.
    decodes(b"0\r\nFoo:bar\r\n\r\n", b"");
    decodes(b"0\r\nFoo:\t a b\tc \r\n\r\n", b"");
    decodes(b"0\r\nFoo: caf\xc3\xa9\r\n\r\n", b"");
    // Every tchar in a name; a value may hold a colon.
    decodes(b"0\r\n!#$%&'*+-.^_`|~09azAZ: a:b\r\n\r\n", b"");
    // Several lines.
    decodes(b"2\r\nhi\r\n0\r\nFoo: bar\r\nX-Empty:\r\nChecksum: 1234\r\n\r\n", b"hi");
}

/// A trailer line that is not a field line is malformed framing: the same
/// 400 as the rest of the chunked grammar.
#[test]
fn refuses_trailer_lines_that_are_not_field_lines() {
    // No colon.
    refuses(b"0\r\nnot a field\r\n\r\n");
    refuses(b"0\r\nFoo\r\n\r\n");
    // Whitespace before the colon (RFC 9112 §5.1).
    refuses(b"0\r\nFoo : bar\r\n\r\n");
    refuses(b"0\r\nFoo\t: bar\r\n\r\n");
    // No name, or a name that is not a token.
    refuses(b"0\r\n: bar\r\n\r\n");
    refuses(b"0\r\nF(o): bar\r\n\r\n");
    refuses(b"0\r\nF\xc3\xa9: bar\r\n\r\n");
    // obs-fold (RFC 9112 §5.2), after a field line or as the first line.
    refuses(b"0\r\nFoo: bar\r\n :fold\r\n\r\n");
    refuses(b"0\r\nFoo: bar\r\n\tmore\r\n\r\n");
    refuses(b"0\r\n :fold\r\n\r\n");
    refuses(b"0\r\nnot a field\r\n :fold\r\n\r\n");
    // A control in the value.
    refuses(b"0\r\nFoo: a\x01b\r\n\r\n");
    refuses(b"0\r\nFoo: a\0\r\n\r\n");
    refuses(b"0\r\nFoo: a\x7f\r\n\r\n");
    refuses(b"0\r\nFoo: a\rb\r\n\r\n");
    // Lines end in CRLF, as the chunk lines do.
    refuses(b"0\r\nFoo: bar\n\r\n");
    refuses(b"0\r\nFoo: bar\r\n\n");
}

#[test]
fn refuses_bad_framing() {
    refuses(b"x\r\n");
    refuses(b"\r\n");
    refuses(b"-1\r\n");
    refuses(b"5\nhello\r\n0\r\n\r\n");
    refuses(b"5\r\nhelloXX0\r\n\r\n");
    refuses(b"5\r\nhello\n0\r\n\r\n");
    refuses(b"5\r\nhello\r\n0\r\n\n");
    refuses(b"5;a\0b\r\nhello\r\n");
    refuses(b"5 \r\nhello\r\n0\r\n\r\n");
    refuses(b"5;\r\nhello\r\n0\r\n\r\n");
    refuses(b"5;=v\r\nhello\r\n0\r\n\r\n");
    refuses(b"5;a=\"open\r\nhello\r\n0\r\n\r\n");
    refuses(b"5;a=b c\r\nhello\r\n0\r\n\r\n");
    refuses(b"0\r\nX: a\rb\r\n\r\n");
}

#[test]
fn refuses_chunk_sizes_that_overflow() {
    refuses(b"1ffffffffffffffff\r\n");
    // Seventeen significant digits, whatever zeros lead them.
    refuses(b"01ffffffffffffffff\r\n");
    refuses(b"000010000000000000000\r\n");
    // Sixteen significant digits still fit, with or without leading zeros.
    for wire in [b"ffffffffffffffff\r\n".as_slice(), b"00000000000000000000ffffffffffffffff\r\n"] {
        let mut decoder = ChunkedDecoder::new(u64::MAX);
        assert_eq!(decoder.decode(wire, &mut [0; 1]), Ok((wire.len(), 0)), "{wire:?}");
        assert_eq!(decoder.state, Chunked::Data { left: u64::MAX });
    }
}

/// RFC 9112 §7.1: `chunk-size = 1*HEXDIG`, so leading zeros are allowed,
/// and they do not count toward the sixteen digits a size may have.
#[test]
fn leading_zeros_do_not_count_toward_the_chunk_size_digits() {
    decodes(b"00000000000000005\r\nhello\r\n0\r\n\r\n", b"hello");
    decodes(b"0000000000000000000000000005\r\nhello\r\n0\r\n\r\n", b"hello");
    decodes(b"00000000000000000a\r\n0123456789\r\n00000000000000000\r\n\r\n", b"0123456789");
    decodes(b"00000000000000000010\r\n0123456789abcdef\r\n0\r\n\r\n", b"0123456789abcdef");
    decodes(b"000000000000000005;ext=1\r\nhello\r\n00000000000000000;last\r\n\r\n", b"hello");
    decodes(b"00000000000000002\r\nhi\r\n00000000000000003\r\nabc\r\n0\r\n\r\n", b"hiabc");
}

/// Leading zeros carry nothing: a body's run of them (past each size's
/// first digit) spends the bound on filler bytes, so an endless run fails
/// at a fixed place and not at whatever length the client sends.
#[test]
fn a_run_of_leading_zeros_is_bounded() {
    let hello = b"5\r\nhello\r\n0\r\n\r\n";
    let mut wire = vec![b'0'; 1 + MAX_CHUNK_FILLER_BYTES];
    wire.extend_from_slice(hello);
    decodes(&wire, b"hello");
    let mut wire = vec![b'0'; 2 + MAX_CHUNK_FILLER_BYTES];
    wire.extend_from_slice(hello);
    refuses(&wire);
    // An endless run, fed a byte at a time: refused at the first zero past
    // the bound.
    assert_eq!(endless(b"", b'0'), (Err(BodyError::Malformed), 1 + MAX_CHUNK_FILLER_BYTES));
    // The bound is per body, shared with chunk extensions.
    let mut wire = b"1;".to_vec();
    wire.resize(2 + MAX_CHUNK_FILLER_BYTES - 3, b'e');
    wire.extend_from_slice(b"\r\nx\r\n0005\r\nhello\r\n0\r\n\r\n");
    decodes(&wire, b"xhello");
    let at = wire.len() - b"05\r\nhello\r\n0\r\n\r\n".len();
    wire.insert(at, b'0');
    refuses(&wire);
}

/// Whitespace after a chunk-size (before its extension) is bounded with
/// the zeros and extensions: an endless run is refused.
#[test]
fn a_run_of_whitespace_after_a_chunk_size_is_bounded() {
    let mut wire = b"5".to_vec();
    // The extension's name and the CR after it count too.
    wire.resize(1 + MAX_CHUNK_FILLER_BYTES - 2, b' ');
    wire.extend_from_slice(b";e\r\nhello\r\n0\r\n\r\n");
    decodes(&wire, b"hello");
    wire.insert(1, b'\t');
    refuses(&wire);
    assert_eq!(endless(b"5", b' '), (Err(BodyError::Malformed), MAX_CHUNK_FILLER_BYTES));
}

#[test]
fn a_chunk_size_past_the_limit_fails_at_the_digit_that_takes_it_there() {
    let hundred = [b'x'; 100];
    let exactly = [b"64\r\n".as_slice(), &hundred, b"\r\n0\r\n\r\n"].concat();
    let cases: [(Vec<u8>, BodyError); 5] = [
        (b"65\r\n".to_vec(), BodyError::TooLarge),
        // Not yet the whole size: it can only grow.
        (b"650".to_vec(), BodyError::TooLarge),
        // One byte more in a second chunk; bytes after the digit that
        // passes the limit are never reached.
        ([b"64\r\n".as_slice(), &hundred, b"\r\n1 \x01"].concat(), BodyError::TooLarge),
        ([b"32\r\n".as_slice(), &hundred[..50], b"\r\n33\x01"].concat(), BodyError::TooLarge),
        (b"6cccccccccccccccccccc \x01\r\n".to_vec(), BodyError::TooLarge),
    ];
    for step in [1, 2, 3, 200] {
        assert_eq!(decode_within(&exactly, step, 100).as_deref(), Ok(&hundred[..]), "step {step}");
        for (wire, error) in &cases {
            assert_eq!(decode_within(wire, step, 100), Err(*error), "step {step}: {wire:?}");
        }
    }
}

#[test]
fn bounds_extensions_and_trailers() {
    let mut wire = b"1;".to_vec();
    wire.resize(2 + MAX_CHUNK_FILLER_BYTES + 1, b'e');
    refuses(&wire);
    let mut wire = b"0\r\nX: ".to_vec();
    wire.resize(5 + MAX_TRAILER_BYTES + 1, b't');
    refuses(&wire);
    // The bound counts the trailer lines' bytes, their CRLFs aside: a first
    // line of all but three, then `Y:z`.
    let mut wire = b"0\r\nX:".to_vec();
    wire.resize(3 + MAX_TRAILER_BYTES - 3, b't');
    wire.extend_from_slice(b"\r\nY:z\r\n\r\n");
    decodes(&wire, b"");
    wire.insert(5, b't');
    refuses(&wire);
}

#[test]
fn decoder_never_reads_past_the_body() {
    let mut decoder = ChunkedDecoder::new(u64::MAX);
    let wire = b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    let mut out = [0u8; 64];
    let mut at = 0;
    while !decoder.is_done() {
        at += decoder.decode(&wire[at..], &mut out).unwrap().0;
    }
    assert_eq!(&wire[at..], b"GET / HTTP/1.1\r\n");
}
