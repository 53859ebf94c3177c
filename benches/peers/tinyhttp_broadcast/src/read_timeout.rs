//! A read timeout for a socket that tiny_http has upgraded.
//!
//! tiny_http hands the upgraded connection over as `Box<dyn ReadWrite>`: it
//! can be neither cloned nor split nor given a timeout, and tiny_http exposes
//! no descriptor (tiny-http issue #8 says as much). A timeout set on the
//! listener would be copied to accepted sockets, but it also bounds
//! `accept`, and tiny_http's accept thread ends at the first error. So one
//! thread here finds the socket by the client's address among the process's
//! descriptors (`/proc/self/fd`) and sets `SO_RCVTIMEO` on it: the only way
//! under tiny_http's API for a thread blocked in a read to wake and push.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// How long a socket's thread waits for its timeout to be set before it
/// gives up on it (its client has most likely gone).
const SET_WAIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    /// Clients whose socket still waits for its timeout.
    pending: Mutex<HashSet<SocketAddr>>,
    /// Signalled when a client is added to `pending`.
    added: Condvar,
    /// Signalled after each scan of the descriptors.
    scanned: Condvar,
}

/// Sets `timeout` on the sockets asked for, from one thread.
#[derive(Clone)]
pub struct ReadTimeouts(Arc<State>);

impl ReadTimeouts {
    pub fn start(timeout: Duration) -> Self {
        let state = Arc::new(State::default());
        let worker = state.clone();
        thread::spawn(move || setter(&worker, timeout));
        ReadTimeouts(state)
    }

    /// Blocks until the socket connected to `client` has its timeout; false
    /// if it was not found within `SET_WAIT`.
    pub fn set_for(&self, client: SocketAddr) -> bool {
        let s = &*self.0;
        let mut pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.insert(client);
        s.added.notify_one();
        let (mut pending, _) =
            s.scanned.wait_timeout_while(pending, SET_WAIT, |p| p.contains(&client)).unwrap_or_else(|e| e.into_inner());
        !pending.remove(&client)
    }
}

fn setter(s: &State, timeout: Duration) {
    loop {
        let wanted = {
            let pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
            let pending = s.added.wait_while(pending, |p| p.is_empty()).unwrap_or_else(|e| e.into_inner());
            pending.clone()
        };
        let found = scan(&wanted, timeout);
        let mut pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
        for client in found {
            pending.remove(&client);
        }
        drop(pending);
        s.scanned.notify_all();
    }
}

/// Sets `timeout` on every socket of this process connected to a client in
/// `wanted`; returns those clients.
fn scan(wanted: &HashSet<SocketAddr>, timeout: Duration) -> Vec<SocketAddr> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return found };
    for entry in dir.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        // SAFETY: the descriptor is only asked for its peer and given a
        // socket option; if another thread closes it meanwhile, both calls
        // fail with EBADF, and if the number is reused the peer check below
        // tells the sockets apart (a client address names one live socket).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let sock = socket2::SockRef::from(&fd);
        let Some(peer) = sock.peer_addr().ok().and_then(|a| a.as_socket()) else { continue };
        if wanted.contains(&peer) && sock.set_read_timeout(Some(timeout)).is_ok() {
            found.push(peer);
        }
    }
    found
}
