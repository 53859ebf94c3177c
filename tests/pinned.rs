//! `Server::pin_workers`: one core worker per CPU, and every worker, core
//! or added for handlers that block, on the CPU of the seat it sits at;
//! the default unless the worker count is set.
//! Linux only (it does nothing elsewhere), and alone in its test binary: it
//! reads every thread of the process, so no other server may run beside it.
#![cfg(all(target_os = "linux", not(httpool_portable)))]

mod common;

use std::time::Duration;

use common::{blocking_server, blocking_server_telling, connect, get, read_reply, send, wait_for};

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

/// The CPUs a thread of this process may run on (`task`: its id, or
/// "self"); `None` when the thread has exited.
fn cpus_of(task: &str) -> Option<Vec<usize>> {
    let path =
        if task == "self" { "/proc/thread-self/status".to_string() } else { format!("/proc/self/task/{task}/status") };
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap();
    Some(parse_cpus(line))
}

/// The CPUs each thread of this process named `prefix`… may run on, in
/// the order the threads were started (of their ids: the name the kernel
/// keeps is cut before a worker's number).
fn threads(prefix: &str) -> Vec<Vec<usize>> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().file_name().into_string().unwrap();
        // A thread that retires between the listing and the reads is left out.
        let Ok(name) = std::fs::read_to_string(format!("/proc/self/task/{task}/comm")) else { continue };
        if name.starts_with(prefix) {
            let Some(cpus) = cpus_of(&task) else { continue };
            found.push((task.parse::<u64>().unwrap(), cpus));
        }
    }
    found.sort();
    found.into_iter().map(|(_, cpus)| cpus).collect()
}

/// Waits until the threads named `prefix`… (in the order they were
/// started) pass `check`, at most [`common::PATIENCE`]: each thread names
/// itself, and a worker sets its own CPUs, as it starts.
fn wait_for_threads(prefix: &str, what: &str, check: impl Fn(&[Vec<usize>]) -> bool) -> Vec<Vec<usize>> {
    let deadline = std::time::Instant::now() + common::PATIENCE;
    loop {
        let found = threads(prefix);
        if check(&found) {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {prefix} threads on {found:?}");
        std::thread::yield_now();
    }
}

/// `n` threads, each on one of `allowed`, together on every one of them.
fn one_cpu_each_covering(found: &[Vec<usize>], n: usize, allowed: &[usize]) -> bool {
    let single = found.iter().all(|cpus| cpus.len() == 1 && allowed.contains(&cpus[0]));
    found.len() == n && single && allowed.iter().all(|cpu| found.iter().any(|cpus| cpus == &[*cpu]))
}

/// One thread more than the CPUs, each on one CPU, all covered, and the
/// extra one on the CPU of the worker whose handler blocks (`blocked`).
fn one_more_beside(found: &[Vec<usize>], core: usize, allowed: &[usize], blocked: &[usize]) -> bool {
    one_cpu_each_covering(found, core + 1, allowed) && found.iter().filter(|cpus| *cpus == blocked).count() == 2
}

#[test]
fn every_worker_runs_on_the_cpu_of_the_seat_it_sits_at() {
    let allowed = cpus_of("self").unwrap();
    let cores = std::thread::available_parallelism().unwrap().get();
    // Asked for 7 core workers: pinning sets the count to the CPUs. Extra
    // threads retire at once when idle.
    // The `/block` handler tells the CPUs its thread may run on.
    let (server, entered, release) = blocking_server_telling(
        |s| s.workers(7).pin_workers(true).max_workers(allowed.len() + 1).worker_idle_timeout(Duration::from_millis(1)),
        || cpus_of("self").unwrap(),
    );
    if cores < allowed.len() {
        // Under a CPU quota nothing is pinned: the 7 asked for stay (as many
        // as `max_workers` allows), free.
        let asked = 7.min(allowed.len() + 1);
        wait_for_threads("httpool-worker", "free workers", |found| {
            found.len() == asked && found.iter().all(|cpus| cpus == &allowed)
        });
        assert!(server.shutdown());
        return;
    }
    // Which thread sits where is not fixed: on a slow start the monitor may
    // start a thread for a seat whose worker has not begun polling it (it
    // retires when idle), and a worker pins itself to a seat it adopts.
    let core = allowed.len();
    wait_for(&server, "the core workers alone", |s| s.threads == core as u64);
    wait_for_threads("httpool-worker", "one worker pinned to each CPU", |found| {
        one_cpu_each_covering(found, core, &allowed)
    });
    wait_for_threads("httpool-monitor", "the monitor is not pinned", |found| found == [allowed.clone()]);

    // A handler blocks, and the monitor (not pinned) starts a thread in its
    // worker's place: it runs on the CPU of that seat.
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/block"));
    let blocked = entered.recv().unwrap();
    assert_eq!(blocked.len(), 1, "the handler runs on a pinned worker: {blocked:?}");
    wait_for(&server, "a thread started by the monitor", |s| s.threads == core as u64 + 1);
    wait_for_threads("httpool-worker", "a thread the monitor started, on the blocked seat's CPU", |found| {
        one_more_beside(found, core, &allowed, &blocked)
    });
    // The handler blocks a while longer: a call across two ticks of the
    // monitor or more marks its connection as one whose handler blocks,
    // which the next call below relies on. (Released as soon as the thread
    // above showed up, it could end a tick after it began, and count as
    // quick.) The call began before this count was read.
    let ticks = server.stats().monitor_ticks;
    wait_for(&server, "two ticks of the monitor during the call", |s| s.monitor_ticks >= ticks + 2);
    // Whichever thread retires once the handler is done, every seat keeps
    // a thread on its CPU.
    release.send(()).unwrap();
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"done");
    wait_for(&server, "the added thread to retire", |s| s.threads == core as u64);
    wait_for_threads("httpool-worker", "a thread retired", |found| one_cpu_each_covering(found, core, &allowed));

    // The connection's handler blocked before: its worker hands its seat
    // to a new thread itself before calling the next one, and lets go of
    // the seat's CPU, so that the handler wakes (or computes) on whichever
    // CPU is free, not behind the thread now sitting at the seat.
    send(&mut conn, &get("/block"));
    assert_eq!(entered.recv().unwrap(), allowed, "a handler expected to block runs on any CPU");
    wait_for(&server, "a thread started by a worker", |s| s.threads == core as u64 + 1);
    wait_for_threads("httpool-worker", "a thread a worker started, on the blocked seat's CPU", |found| {
        // One thread free (with one CPU, it looks pinned), the others one
        // on each CPU.
        let mut pinned = found.to_vec();
        let Some(free) = pinned.iter().position(|cpus| *cpus == allowed) else { return false };
        pinned.remove(free);
        one_cpu_each_covering(&pinned, core, &allowed)
    });
    // A trivial request is served meanwhile.
    let mut other = connect(server.local_addr());
    send(&mut other, &get("/"));
    assert_eq!(read_reply(&mut other, false).unwrap().body, b"done");
    release.send(()).unwrap();
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"done");
    assert!(server.shutdown());

    // Without a word, workers are pinned, one per CPU, where there are two
    // CPUs or more; a worker count set, or a bound on threads below the
    // CPUs, leaves them free, unless pinning is asked for as well (above).
    // Extra threads, if a slow start makes the monitor add one, retire at
    // once.
    let quick = |s: httpool::Server| s.worker_idle_timeout(Duration::from_millis(1));
    let (server, _, _) = blocking_server(quick);
    if core > 1 {
        wait_for(&server, "one core worker per CPU", |s| s.threads == core as u64);
        wait_for_threads("httpool-worker", "workers pinned by default", |found| {
            one_cpu_each_covering(found, core, &allowed)
        });
    } else {
        let unpinned = httpool::default_workers() as u64;
        wait_for(&server, "one CPU: the unpinned default", |s| s.threads == unpinned);
    }
    assert!(server.shutdown());
    free_workers(|s| quick(s).workers(3), 3, &allowed);
    if core > 1 {
        free_workers(|s| quick(s).max_workers(core - 1), core - 1, &allowed);
    }
}

/// Starts a server configured by `configure`, which must run `n` workers
/// free to run on every CPU allowed, and stops it.
fn free_workers(configure: impl FnOnce(httpool::Server) -> httpool::Server, n: usize, allowed: &[usize]) {
    let (server, _, _) = blocking_server(configure);
    wait_for(&server, "the workers asked for", |s| s.threads == n as u64);
    wait_for_threads("httpool-worker", "counted or bounded workers, free", |found| {
        found.len() == n && found.iter().all(|cpus| cpus == allowed)
    });
    assert!(server.shutdown());
}

#[test]
fn cpu_lists_are_read_as_the_kernel_writes_them() {
    assert_eq!(parse_cpus("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11]);
    assert_eq!(parse_cpus("5"), [5]);
}
