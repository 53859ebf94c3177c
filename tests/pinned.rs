//! `Server::pin_workers`: one core worker per CPU, each pinned to its own;
//! the threads added for handlers that block run anywhere. Linux only (it
//! does nothing elsewhere), and alone in its test binary: it reads every
//! thread of the process, so no other server may run beside it.
#![cfg(all(target_os = "linux", not(httpool_portable)))]

mod common;

use common::{blocking_server, connect, get, read_reply, send, wait_for};

/// The CPUs in a `Cpus_allowed_list` value ("0-3,8,10-11").
fn parse_cpus(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

/// The CPUs a thread of this process may run on (`task`: its id, or "self").
fn cpus_of(task: &str) -> Vec<usize> {
    let path =
        if task == "self" { "/proc/thread-self/status".to_string() } else { format!("/proc/self/task/{task}/status") };
    let status = std::fs::read_to_string(path).unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap();
    parse_cpus(line)
}

/// The CPUs each thread of this process named `prefix`… may run on, in
/// the order the threads were started (of their ids: the name the kernel
/// keeps is cut before a worker's number).
fn threads(prefix: &str) -> Vec<Vec<usize>> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().file_name().into_string().unwrap();
        let Ok(name) = std::fs::read_to_string(format!("/proc/self/task/{task}/comm")) else { continue };
        if name.starts_with(prefix) {
            found.push((task.parse::<u64>().unwrap(), cpus_of(&task)));
        }
    }
    found.sort();
    found.into_iter().map(|(_, cpus)| cpus).collect()
}

/// The threads named `prefix`… once `n` of them have named themselves
/// (each does as it starts), at most [`common::PATIENCE`].
fn named(prefix: &str, n: usize) -> Vec<Vec<usize>> {
    let deadline = std::time::Instant::now() + common::PATIENCE;
    loop {
        let found = threads(prefix);
        assert!(found.len() <= n, "{found:?}");
        if found.len() == n {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "{n} of {prefix} did not start: {found:?}");
        std::thread::yield_now();
    }
}

#[test]
fn pinned_core_workers_take_one_cpu_each_and_threads_added_for_blocking_handlers_are_free() {
    let allowed = cpus_of("self");
    let cores = std::thread::available_parallelism().unwrap().get();
    // Under a CPU quota nothing is pinned: the 7 asked for stay, free.
    let pinning = cores >= allowed.len();
    let core = if pinning { allowed.len() } else { 7 };
    // Asked for 7 core workers: pinning sets the count to the CPUs.
    let (server, entered, release) = blocking_server(|s| s.workers(7).pin_workers(true).max_workers(core + 1));
    let started = named("httpool-worker", core);
    for (i, cpus) in started.iter().enumerate() {
        let expected = if pinning { vec![allowed[i]] } else { allowed.clone() };
        assert_eq!(cpus, &expected, "worker {i}: pinned to the {i}th allowed CPU, unless under a quota");
    }
    assert_eq!(server.stats().threads, core as u64);
    assert_eq!(named("httpool-monitor", 1), std::slice::from_ref(&allowed), "the monitor is not pinned");
    // Every core worker blocks in a handler: the thread added so that the
    // server goes on serving may run on any allowed CPU.
    let mut blocked = Vec::new();
    for _ in 0..core {
        let mut conn = connect(server.local_addr());
        send(&mut conn, &get("/block"));
        entered.recv().unwrap();
        blocked.push(conn);
    }
    wait_for(&server, "a thread added beside the blocked ones", |s| s.threads == core as u64 + 1);
    let all = named("httpool-worker", core + 1);
    assert_eq!(all[core], allowed, "the added thread is not pinned");
    // It serves: a trivial request while every core worker is blocked.
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"done");
    for _ in 0..core {
        release.send(()).unwrap();
    }
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    assert!(server.shutdown());
}

#[test]
fn cpu_lists_are_read_as_the_kernel_writes_them() {
    assert_eq!(parse_cpus("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11]);
    assert_eq!(parse_cpus("5"), [5]);
}
