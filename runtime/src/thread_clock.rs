//! The CPU time of the calling thread: what the runtime's own work (loading a plan, judging the
//! op stream) costs the program, without the time the thread spent descheduled. Wall time
//! measured the machine's load instead: on a 2-core machine running lavapipe the watch's wall
//! time was 17-37 ms for 2-5 ms of its own work, and one CI run failed on it.
//!
//! Reading this clock is a system call (0.26 us on the 2-core CI machine; the reading inside a
//! span counts towards it), so the watch clocks a random sample of its operations while it
//! judges (the first steps after a load, [`SampledClock`]) and none once settled.
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

/// Estimates the CPU time of many short spans of work while reading the clock for few of
/// them. A reading costs about as much as the op-stream watch's work for one operation (a
/// system call), so clocking every operation doubled what judging cost the program. Spans
/// started with `always` (judgements, which can take milliseconds) are all clocked; of the
/// others one in [`SampledClock::EVERY`], chosen at random so that no periodic op stream
/// aligns with the sample, is clocked and counts `EVERY` times. The part of a reading that
/// falls inside the span it measures, calibrated at start, is taken off every clocked span.
pub struct SampledClock {
    total_ns: f64,
    reading_ns: f64,
    random: u64,
}

/// A started span: `None` when it is not clocked.
pub struct Span(Option<(ThreadClock, f64)>);

impl SampledClock {
    pub const EVERY: u64 = 8;

    pub fn new() -> Self {
        // The least of a few back-to-back pairs: the cost of a reading inside a span, never
        // more (an overestimate would hide real work).
        let reading = (0..16).map(|_| ThreadClock::now().elapsed()).min().unwrap_or_default();
        Self { total_ns: 0.0, reading_ns: reading.as_nanos() as f64, random: 0x9E37_79B9_7F4A_7C15 }
    }

    pub fn start(&mut self, always: bool) -> Span {
        // xorshift64: a cheap draw whose low bits carry no period an op stream could share.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        if always {
            Span(Some((ThreadClock::now(), 1.0)))
        } else if self.random.is_multiple_of(Self::EVERY) {
            Span(Some((ThreadClock::now(), Self::EVERY as f64)))
        } else {
            Span(None)
        }
    }

    pub fn stop(&mut self, span: Span) {
        if let Span(Some((start, weight))) = span {
            let ns = start.elapsed().as_nanos() as f64 - self.reading_ns;
            self.total_ns += weight * ns.max(0.0);
        }
    }

    /// The estimated CPU time of every span so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.total_ns as u64)
    }
}

impl Default for SampledClock {
    fn default() -> Self {
        Self::new()
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

    /// The sampled estimate of many equal spans is near their clocked total, and spans of no
    /// work count nearly nothing (the readings' own cost is taken off).
    #[test]
    fn a_sampled_estimate_tracks_the_work_and_not_the_readings() {
        let work = |n: u64| {
            let mut x = 0u64;
            for i in 0..n {
                x = std::hint::black_box(x.wrapping_add(i));
            }
        };
        let mut idle = SampledClock::new();
        for _ in 0..20_000 {
            let span = idle.start(false);
            idle.stop(span);
        }
        let mut busy = SampledClock::new();
        let start = ThreadClock::now();
        for _ in 0..20_000 {
            let span = busy.start(false);
            work(2_000);
            busy.stop(span);
        }
        let clocked = start.elapsed();
        let readings = Duration::from_nanos((20_000.0 * idle.reading_ns) as u64);
        let (idle, busy) = (idle.total(), busy.total());
        assert!(idle < readings / 2, "20,000 empty spans estimated at {idle:?}, their readings cost {readings:?}");
        let ratio = busy.as_secs_f64() / clocked.as_secs_f64();
        assert!((0.6..=1.3).contains(&ratio), "estimate {busy:?} for {clocked:?} of clocked work");
    }
}
