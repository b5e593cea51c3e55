//! The CPU time of the calling thread: what the runtime's own work (loading a plan, judging the
//! op stream) costs the program, without the time the thread spent descheduled. Wall time
//! measured the machine's load instead: on a 2-core machine running lavapipe the watch's wall
//! time was 17-37 ms for 2-5 ms of its own work, and one CI run failed on it.
//!
//! Reading this clock is a system call (0.6-0.9 us on the 2-core CI machine), so the watch
//! clocks its short spans with the monotonic clock ([`SpanClock`]) and none once settled.
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

/// Adds up the CPU time of many short spans of work (the op-stream watch's work for one
/// operation: 0.3 us in a loop, a few us inside a running program) without a system call per
/// span. The thread's CPU clock is a system call (0.6-0.9 us on the 2-core CI machine, more in
/// a sandboxed one), so clocking every operation with it cost the program about as much as the
/// work, and sampling one operation in eight estimated double the work (the readings' own cost
/// inside the spans varies more than a calibration at start can take off). Short spans read
/// the monotonic clock instead (no system call where the C library reads it from the vDSO, as
/// Linux's does): its time is the span's CPU time unless the thread was descheduled inside
/// it, for milliseconds, and each short span counts at most [`SpanClock::SHORT_CAP`], far
/// above any operation's work. Long spans (judgements, which may take milliseconds) read the
/// thread's CPU clock.
#[derive(Default)]
pub struct SpanClock {
    total: Duration,
}

/// A started span.
pub enum Span {
    Short(std::time::Instant),
    Long(ThreadClock),
}

impl SpanClock {
    /// What one short span counts at most: a descheduled thread is away for a time slice
    /// (milliseconds); the watch's work for one operation is under 10 us.
    pub const SHORT_CAP: Duration = Duration::from_micros(50);

    pub fn start(&mut self, long: bool) -> Span {
        if long { Span::Long(ThreadClock::now()) } else { Span::Short(std::time::Instant::now()) }
    }

    pub fn stop(&mut self, span: Span) {
        self.total += match span {
            Span::Short(start) => start.elapsed().min(Self::SHORT_CAP),
            Span::Long(start) => start.elapsed(),
        };
    }

    /// The CPU time of every span so far.
    pub fn total(&self) -> Duration {
        self.total
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

    /// Short spans add up to the work they hold, empty ones to nearly nothing, and a span the
    /// thread slept through counts at most the cap.
    #[test]
    fn short_spans_track_the_work_and_not_the_readings_or_a_descheduling() {
        let work = |n: u64| {
            let mut x = 0u64;
            for i in 0..n {
                x = std::hint::black_box(x.wrapping_add(i));
            }
        };
        let mut idle = SpanClock::default();
        for _ in 0..20_000 {
            let span = idle.start(false);
            idle.stop(span);
        }
        assert!(idle.total() < Duration::from_millis(4), "20,000 empty spans counted {:?}", idle.total());
        let mut busy = SpanClock::default();
        let start = ThreadClock::now();
        for _ in 0..20_000 {
            let span = busy.start(false);
            work(2_000);
            busy.stop(span);
        }
        let clocked = start.elapsed();
        let ratio = busy.total().as_secs_f64() / clocked.as_secs_f64();
        assert!((0.6..=1.3).contains(&ratio), "{:?} counted for {clocked:?} of clocked work", busy.total());
        let mut asleep = SpanClock::default();
        let span = asleep.start(false);
        std::thread::sleep(Duration::from_millis(20));
        asleep.stop(span);
        assert_eq!(asleep.total(), SpanClock::SHORT_CAP);
        let span = asleep.start(true);
        std::thread::sleep(Duration::from_millis(20));
        asleep.stop(span);
        assert!(asleep.total() < SpanClock::SHORT_CAP + Duration::from_millis(5), "a long span counts CPU time");
    }
}
