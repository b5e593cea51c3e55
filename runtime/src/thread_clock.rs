//! The CPU time of the calling thread: what the runtime's own work (loading a plan, judging the
//! op stream) costs the program, without the time the thread spent descheduled. Wall time
//! measured the machine's load instead: on a 2-core machine running lavapipe the watch's wall
//! time was 17-37 ms for 2-5 ms of its own work, and one CI run failed on it.
//!
//! Reading this clock is a system call (0.26 us on the 2-core CI machine; the reading inside a
//! span counts towards it), so the watch reads it twice per operation only while it judges
//! (the first steps after a load), never once settled.
use std::time::Duration;

/// A reading of the calling thread's CPU clock.
#[derive(Clone, Copy, Debug)]
pub struct ThreadClock(Duration);

impl ThreadClock {
    #[cfg(unix)]
    pub fn now() -> Self {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `t` is a valid timespec to write into; the clock id is a constant libc
        // defines on every unix this crate builds for.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        if rc != 0 {
            return Self(Duration::ZERO);
        }
        Self(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
    }

    /// Elsewhere no per-thread clock is read: wall time since the process's first reading.
    #[cfg(not(unix))]
    pub fn now() -> Self {
        use std::sync::OnceLock;
        use std::time::Instant;
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        Self(EPOCH.get_or_init(Instant::now).elapsed())
    }

    /// CPU time the thread used since this reading (zero if read on another thread: the
    /// clocks differ, and a negative span is no cost).
    pub fn elapsed(self) -> Duration {
        Self::now().0.saturating_sub(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_work_and_not_sleep() {
        let start = ThreadClock::now();
        std::thread::sleep(Duration::from_millis(50));
        let slept = start.elapsed();
        assert!(slept < Duration::from_millis(10), "50 ms asleep counted as {slept:?}");
        // Spin until the clock shows 20 ms of work (or give up after 10 s of wall time, on a
        // machine too loaded to schedule this thread): the clock advances with work, never
        // faster than the wall clock.
        let (start, wall) = (ThreadClock::now(), std::time::Instant::now());
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(20) && wall.elapsed() < Duration::from_secs(10) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let (worked, waited) = (start.elapsed(), wall.elapsed());
        assert!(worked >= Duration::from_millis(20), "10 s of spinning counted as {worked:?}");
        assert!(worked <= waited + Duration::from_millis(1), "{worked:?} of CPU time in {waited:?}");
    }
}
