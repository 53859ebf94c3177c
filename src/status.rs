//! Status codes and their reason phrases (RFC 9110 §15).

/// Returns the reason phrase the crate writes for `code`: those of RFC 9110
/// and of the other codes in IANA's status code registry that servers send
/// (RFC 4918, 6585, 7725, 8470), or `""` for the rest (the status line is
/// still valid with an empty reason, RFC 9112 §4).
pub(crate) fn reason(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        101 => "Switching Protocols",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// True when a response with this status never has content (RFC 9110 §6.4.1:
/// 1xx, 204 and 304; §15.3.6: 205).
pub(crate) fn forbids_body(code: u16) -> bool {
    code < 200 || matches!(code, 204 | 205 | 304)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_reasons() {
        assert_eq!(reason(200), "OK");
        assert_eq!(reason(431), "Request Header Fields Too Large");
        assert_eq!(reason(407), "Proxy Authentication Required");
        assert_eq!(reason(507), "Insufficient Storage");
        assert_eq!(reason(599), "");
    }

    #[test]
    fn bodyless_statuses() {
        for code in [100, 101, 199, 204, 205, 304] {
            assert!(forbids_body(code), "{code}");
        }
        for code in [200, 206, 301, 404, 500] {
            assert!(!forbids_body(code), "{code}");
        }
    }
}
