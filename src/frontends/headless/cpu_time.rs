//! The CPU time used so far by this process and by the calling thread, as the kernel's
//! CPU clocks tell it.

/// CPU time this process has used so far, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_time() -> std::time::Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> std::time::Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids are the process's and
    // the thread's own, which always exist.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    match ok {
        true => std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
        false => std::time::Duration::ZERO,
    }
}
