//! A request's id as the request keeps it (see [`crate::request_id`],
//! which takes or makes it).

/// An id the server makes: 12 hex digits for the process, `-`, and the
/// count in hex (at most 16 digits).
pub(crate) const MADE_LEN: usize = 12 + 1 + 16;

/// A request's id, kept in the request: the proxy's, borrowed from the
/// head, or one made here.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RequestIdText<'a> {
    Given(&'a str),
    Made { len: u8, bytes: [u8; MADE_LEN] },
}

impl RequestIdText<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            RequestIdText::Given(id) => id,
            // Only hex digits and `-` are written there.
            RequestIdText::Made { len, bytes } => std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or(""),
        }
    }
}
