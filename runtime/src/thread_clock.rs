//! The CPU time of the calling thread: what the runtime's own work (loading a plan, judging the
//! op stream) costs the program, without the time the thread spent descheduled. Wall time
//! measured the machine's load instead: on a 2-core machine running lavapipe the watch's wall
//! time was 17-37 ms for 2-5 ms of its own work, and one CI run failed on it.
//!
//! Reading this clock is a system call (0.6-0.9 us on the 2-core CI machine), so the watch
//! clocks its short spans with a tick counter ([`SpanClock`], [`ticks`]) and none once settled.
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
        Self(Duration::from_nanos(monotonic_ns()))
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
/// [`ticks`] instead: a span's time is its CPU time unless the thread was descheduled inside
/// it, for milliseconds, and each short span counts at most [`SpanClock::SHORT_CAP`] (in ticks:
/// see [`SpanClock::SHORT_CAP_TICKS`]), far above any operation's work. Long spans (judgements,
/// which may take milliseconds) read the thread's CPU clock.
pub struct SpanClock {
    long: Duration,
    short_ticks: u64,
    /// Where ticks are converted to time: a reading of both clocks when this clock was made.
    origin: (std::time::Instant, u64),
}

impl Default for SpanClock {
    fn default() -> Self {
        SpanClock { long: Duration::ZERO, short_ticks: 0, origin: (std::time::Instant::now(), ticks()) }
    }
}

/// A started span.
pub enum Span {
    Short(u64),
    Long(ThreadClock),
}

impl SpanClock {
    /// What one short span counts at most: a descheduled thread is away for a time slice
    /// (milliseconds); the watch's work for one operation is under 10 us.
    pub const SHORT_CAP: Duration = Duration::from_micros(50);
    /// [`Self::SHORT_CAP`] in ticks of the fastest counter [`ticks`] may read (10 GHz): with a
    /// slower one a span counts up to a few times the cap, still far below a time slice.
    pub const SHORT_CAP_TICKS: u64 = Self::SHORT_CAP.as_nanos() as u64 * 10;

    pub fn start(&mut self, long: bool) -> Span {
        if long { Span::Long(ThreadClock::now()) } else { Span::Short(ticks()) }
    }

    pub fn stop(&mut self, span: Span) {
        match span {
            Span::Short(start) => self.short_ticks += ticks().saturating_sub(start).min(Self::SHORT_CAP_TICKS),
            Span::Long(start) => self.long += start.elapsed(),
        }
    }

    /// The CPU time of every span so far: short spans' ticks at the rate the counter ran since
    /// this clock was made.
    pub fn total(&self) -> Duration {
        let (at, ticks0) = self.origin;
        let (wall, counted) = (at.elapsed().as_secs_f64(), ticks().saturating_sub(ticks0));
        let per_tick = if counted == 0 { 0.0 } else { wall / counted as f64 };
        // Short spans never count more than the wall time since this clock was made.
        self.long + Duration::from_secs_f64(self.short_ticks as f64 * per_tick).min(at.elapsed())
    }
}

/// A counter that advances at a constant rate: the time-stamp counter on x86_64 CPUs whose
/// counter is invariant (one instruction, no memory read: the monotonic clock's vDSO call cost
/// the watch two reads of 25 ns or more per operation on the 2-core CI machine, and a cache miss
/// on its data page inside a running program), elsewhere nanoseconds of the monotonic clock.
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if invariant_tsc() {
        // SAFETY: RDTSC exists on every x86_64 CPU; it reads a counter and touches no memory.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    monotonic_ns()
}

/// Nanoseconds of the monotonic clock since the process's first reading.
fn monotonic_ns() -> u64 {
    use std::sync::OnceLock;
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// CPUID 0x8000_0007, EDX bit 8: the time-stamp counter runs at a constant rate in every
/// power state (Linux's `constant_tsc nonstop_tsc`), so ticks convert to time at one rate.
#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use std::sync::OnceLock;
    static INVARIANT: OnceLock<bool> = OnceLock::new();
    *INVARIANT.get_or_init(|| {
        // Leaf 0x8000_0007 is read only when the CPU reports it.
        let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
        max >= 0x8000_0007 && core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
    })
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
        // Spans of work against the thread's CPU clock over the same loop. Other processes
        // deschedule the thread inside spans, each then counting up to the cap for no work: 1.37
        // once on the 2-core CI machine with two `blazec run` processes beside the test
        // (2026-12-06). So up to three tries; a clock that miscounts fails all three.
        let in_range = |ratio: &f64| (0.6..=1.3).contains(ratio);
        let mut ratios = Vec::new();
        while ratios.len() < 3 && !ratios.iter().any(in_range) {
            let mut busy = SpanClock::default();
            let start = ThreadClock::now();
            for _ in 0..20_000 {
                let span = busy.start(false);
                work(2_000);
                busy.stop(span);
            }
            ratios.push(busy.total().as_secs_f64() / start.elapsed().as_secs_f64());
        }
        assert!(ratios.iter().any(in_range), "spans counted {ratios:?} times the clocked work");
        let mut asleep = SpanClock::default();
        let span = asleep.start(false);
        std::thread::sleep(Duration::from_millis(20));
        asleep.stop(span);
        let capped = asleep.total();
        assert!(
            capped >= SpanClock::SHORT_CAP / 10 && capped <= SpanClock::SHORT_CAP * 10,
            "20 ms asleep counted {capped:?}"
        );
        let span = asleep.start(true);
        std::thread::sleep(Duration::from_millis(20));
        asleep.stop(span);
        assert!(asleep.total() < capped + Duration::from_millis(5), "a long span counts CPU time");
    }
}
