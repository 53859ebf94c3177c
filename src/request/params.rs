//! The route parameters a [`Router`](crate::Router) leaves in the request
//! it matched: where each value sits in the path, named by the pattern.

/// Most parameters one route may have.
pub const MAX_PARAMS: usize = 8;

/// The parameters of the route that matched: its pattern (which names
/// them, in order), and where each value sits in the request's path. Kept
/// small: it is part of every `Request`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RouteParams {
    pub(crate) pattern: &'static str,
    pub(crate) len: u8,
    pub(crate) spans: [(u32, u32); MAX_PARAMS],
}

impl RouteParams {
    /// The raw (percent-encoded) value of `name` in `path`.
    pub(crate) fn get<'p>(&self, path: &'p str, name: &str) -> Option<&'p str> {
        let i = names(self.pattern).take(usize::from(self.len)).position(|n| n == name)?;
        let (start, end) = self.spans[i];
        path.get(start as usize..end as usize)
    }
}

/// The parameter names in `pattern`, in order: `{name}` and `{*name}`
/// (`{{` and `}}` are literal braces).
pub(crate) fn names(pattern: &str) -> impl Iterator<Item = &str> {
    let mut rest = pattern;
    std::iter::from_fn(move || {
        loop {
            let at = rest.find(['{', '}'])?;
            let (brace, after) = (rest.as_bytes()[at], &rest[at + 1..]);
            if after.as_bytes().first() == Some(&brace) {
                rest = &after[1..];
                continue;
            }
            if brace == b'}' {
                rest = after;
                continue;
            }
            let end = after.find('}').unwrap_or(after.len());
            rest = after.get(end + 1..).unwrap_or("");
            return Some(after[..end].trim_start_matches('*'));
        }
    })
}
